"""Every place Tether turns a compiler check off says why, next to it (issue 34: "each one left
justified in a comment").

- `@unchecked Sendable` and `nonisolated(unsafe)`: the comment block directly above the
  declaration (its doc comment, or a `//` block between the doc comment and the declaration) names
  the attribute and, after it, the reason — what makes the state safe to share: a lock, one
  thread, immutable state. The attribute named alone is not a reason.
- `@exclusivity(unchecked)`: a comment block names the attribute and says why no two accesses
  overlap, either directly above the property, in the doc comment of the type that holds it, or in
  the comment that opens the file (where one explanation covers every check class of the file).

It reads Sources/, Tests/ and every example package's Sources/ and Tests/ (test rigs share state
between threads too), and finds an attribute split over two lines (`@unchecked` at a line's end,
`Sendable` on the next) as well as on one.

Run alone: `python3 -m pytest -q -s Harness/ci/test_unchecked_is_justified.py`. The counts it
prints, per tree, are the figures the issue asks to quote.
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "Sources"
# Where Swift is written: the package's own and each example package's, never a build folder.
TREES = [ROOT / "Sources", ROOT / "Tests"] + sorted(
    folder for example in (ROOT / "Examples").glob("*") for folder in (example / "Sources", example / "Tests")
    if folder.is_dir())

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
    return sorted(path for tree in TREES for path in tree.rglob("*.swift") if ".build" not in path.parts)


def tree_of(path: Path) -> str:
    for tree in TREES:
        if tree in path.parents:
            return str(tree.relative_to(ROOT)) + "/"
    return str(path.parent.relative_to(ROOT)) + "/"


def attribute_lines(lines: list[str], pattern: re.Pattern) -> list[int]:
    """The indices of the code lines where `pattern` starts, a match split over two lines
    included (it is looked for in the code with comment lines blanked, line breaks kept)."""
    code = "\n".join("" if is_comment(line) else line.split("//")[0] for line in lines)
    starts = []
    for match in pattern.finditer(code):
        index = code.count("\n", 0, match.start())
        if index not in starts:
            starts.append(index)
    return starts


def declaration_start(lines: list[str], index: int) -> int:
    """The first line of the declaration `lines[index]` belongs to: a line that only continues a
    declaration (`Sendable {` after `@unchecked`, or an inheritance list's next line) is taken back
    to the line that opens it."""
    i = index
    while i > 0 and not is_comment(lines[i - 1]) and lines[i - 1].rstrip().endswith((",", "@unchecked", ":")):
        i -= 1
    return i


def test_every_unchecked_sendable_and_nonisolated_unsafe_says_why_next_to_it():
    unjustified = []
    counts: dict[str, dict[str, int]] = {}
    for path in swift_files():
        lines = path.read_text(encoding="utf-8").splitlines()
        for attribute, pattern in (("@unchecked Sendable", UNCHECKED_SENDABLE), ("nonisolated(unsafe)", NONISOLATED_UNSAFE)):
            for index in attribute_lines(lines, pattern):
                per_tree = counts.setdefault(tree_of(path), {"@unchecked Sendable": 0, "nonisolated(unsafe)": 0})
                per_tree[attribute] += 1
                if not justified(comment_block_above(lines, declaration_start(lines, index)), attribute):
                    unjustified.append(f"{path.relative_to(ROOT)}:{index + 1}: {lines[index].strip()}")
    for tree, per_tree in counts.items():
        print(f"{tree}: " + ", ".join(f"{attribute} {count}" for attribute, count in per_tree.items()))
    assert counts.get("Sources/", {}).get("@unchecked Sendable", 0) > 0, "found none in Sources/: is it where this test thinks it is?"
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
    print(f"@exclusivity(unchecked): {count} in {', '.join(str(tree.relative_to(ROOT)) for tree in TREES)}")
    assert not unjustified, (
        "these properties turn off exclusivity checking without a comment (above them, on their "
        "type, or opening the file) saying why no two accesses overlap:\n" + "\n".join(unjustified))


def test_an_attribute_split_over_two_lines_is_found_and_read_with_the_comment_above_its_declaration():
    lines = [
        "/// A box. `@unchecked Sendable`: every field is guarded by `lock`.",
        "final class Box: Equatable, @unchecked",
        "    Sendable {",
        "}",
        "// nonisolated(unsafe) in a comment is not a declaration",
        "final class Bare: Hashable,",
        "    @unchecked Sendable {}",
    ]
    found = attribute_lines(lines, UNCHECKED_SENDABLE)
    assert found == [1, 6]
    assert justified(comment_block_above(lines, declaration_start(lines, found[0])), "@unchecked Sendable")
    assert not justified(comment_block_above(lines, declaration_start(lines, found[1])), "@unchecked Sendable")
    assert attribute_lines(lines, NONISOLATED_UNSAFE) == []
