"""Every place Tether turns a compiler check off says why, next to it (issue 34: "each one left
justified in a comment").

- `@unchecked Sendable` and `nonisolated(unsafe)`: the comment block directly above the
  declaration (its doc comment, or a `//` block between the doc comment and the declaration) names
  the attribute and, after it, the reason — what makes the state safe to share: a lock, one
  thread, immutable state. The attribute named alone is not a reason.
- `@exclusivity(unchecked)`: a comment block names the attribute and says why no two accesses
  overlap, either directly above the property, in the doc comment of the type that holds it, or in
  the comment that opens the file (where one explanation covers every check class of the file).

Run alone: `python3 -m pytest -q Harness/ci/test_unchecked_is_justified.py`. The counts it prints
are the figures the issue asks to quote.
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "Sources"

UNCHECKED_SENDABLE = re.compile(r"@unchecked\s+Sendable")
NONISOLATED_UNSAFE = re.compile(r"nonisolated\(unsafe\)")
UNCHECKED_EXCLUSIVITY = "@exclusivity(unchecked)"
TYPE_DECLARATION = re.compile(
    r"^(\s*)(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|package|internal|private|fileprivate|open|final)\s+)*"
    r"(?:class|struct|enum|actor|extension)\s+\w")


# The attribute named in a comment, then its reason: at least a few words after it (`: …`,
# `because …`, `without a lock: …`). The attribute named alone is not a reason.
def justified(block: str, attribute: str) -> bool:
    at = block.find(attribute)
    if at < 0:
        return False
    reason = re.sub(r"[/`*]", " ", block[at + len(attribute):])
    return len(re.findall(r"[A-Za-z]{2,}", reason)) >= 4


def is_comment(line: str) -> bool:
    stripped = line.strip()
    return stripped.startswith("//") or stripped.startswith("*") or stripped.startswith("/*")


def comment_block_above(lines: list[str], index: int) -> str:
    """The contiguous comment lines directly above `lines[index]`, attributes skipped."""
    block = []
    i = index - 1
    while i >= 0:
        stripped = lines[i].strip()
        if is_comment(lines[i]):
            block.append(stripped)
        elif stripped.startswith("@") and not block:
            pass  # an attribute line between the comment and the declaration
        else:
            break
        i -= 1
    return "\n".join(reversed(block))


def opening_comment(lines: list[str]) -> str:
    """The comment lines before the file's first type declaration."""
    block = []
    for line in lines:
        if TYPE_DECLARATION.match(line):
            break
        if is_comment(line):
            block.append(line.strip())
    return "\n".join(block)


def enclosing_type_index(lines: list[str], index: int) -> int | None:
    """The nearest type declaration above `lines[index]` indented less than it."""
    indent = len(lines[index]) - len(lines[index].lstrip())
    for i in range(index - 1, -1, -1):
        match = TYPE_DECLARATION.match(lines[i])
        if match and len(match.group(1)) < indent:
            return i
    return None


def swift_files() -> list[Path]:
    return sorted(SOURCES.rglob("*.swift"))


def test_every_unchecked_sendable_and_nonisolated_unsafe_says_why_next_to_it():
    unjustified = []
    counts = {"@unchecked Sendable": 0, "nonisolated(unsafe)": 0}
    for path in swift_files():
        lines = path.read_text(encoding="utf-8").splitlines()
        for index, line in enumerate(lines):
            if is_comment(line):
                continue
            for attribute, pattern in (("@unchecked Sendable", UNCHECKED_SENDABLE), ("nonisolated(unsafe)", NONISOLATED_UNSAFE)):
                if not pattern.search(line):
                    continue
                counts[attribute] += 1
                if not justified(comment_block_above(lines, index), attribute):
                    unjustified.append(f"{path.relative_to(ROOT)}:{index + 1}: {line.strip()}")
    for attribute, count in counts.items():
        print(f"{attribute}: {count} in Sources/")
    assert counts["@unchecked Sendable"] > 0, "found none: is Sources/ where this test thinks it is?"
    assert not unjustified, (
        "these declarations turn off Sendable checking without a comment above them naming the "
        "attribute, then `:` and what makes them safe (a lock, one thread, immutable state):\n"
        + "\n".join(unjustified))


def test_every_unchecked_exclusivity_says_why_next_to_it():
    unjustified = []
    count = 0
    for path in swift_files():
        lines = path.read_text(encoding="utf-8").splitlines()
        opening = opening_comment(lines)
        for index, line in enumerate(lines):
            if is_comment(line) or UNCHECKED_EXCLUSIVITY not in line:
                continue
            count += 1
            places = [comment_block_above(lines, index), opening]
            owner = enclosing_type_index(lines, index)
            if owner is not None:
                places.append(comment_block_above(lines, owner))
            if not any(UNCHECKED_EXCLUSIVITY in place or "Unchecked:" in place for place in places):
                unjustified.append(f"{path.relative_to(ROOT)}:{index + 1}: {line.strip()}")
    print(f"@exclusivity(unchecked): {count} in Sources/")
    assert not unjustified, (
        "these properties turn off exclusivity checking without a comment (above them, on their "
        "type, or opening the file) saying why no two accesses overlap:\n" + "\n".join(unjustified))
