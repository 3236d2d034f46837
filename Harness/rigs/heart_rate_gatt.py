"""The Bluetooth Heart Rate Service in Python, with no I/O: UUIDs, the Heart Rate Measurement
codec, and the scenario schedules of the heart-rate rigs.

Shared by heart_rate_peripheral.py (encodes what the strap notifies), heart_rate_central.py
(decodes what it receives, for its log) and test_heart_rate_rigs.py. It is written apart from the
Swift HeartRateCore (Examples/HeartRate) on purpose: both are checked against the same hand-written
byte vectors, so a misreading of the spec in one does not hide in the other.

Layout of Heart Rate Measurement (0x2A37), from the Heart Rate Service spec v1.0 and the GATT
Specification Supplement: a flags byte (bit 0: heart rate is UInt16 instead of UInt8; bit 2:
sensor contact supported, bit 1: contact detected; bit 3: Energy Expended present, UInt16 kJ;
bit 4: one or more RR intervals present, UInt16 each in 1/1024 s), then the fields in that order,
all little-endian.
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass, field

HEART_RATE_SERVICE = 0x180D
HEART_RATE_MEASUREMENT = 0x2A37
BODY_SENSOR_LOCATION = 0x2A38
HEART_RATE_CONTROL_POINT = 0x2A39
DEVICE_INFORMATION_SERVICE = 0x180A
CCCD = 0x2902

BODY_SENSOR_LOCATION_CHEST = 1
RESET_ENERGY_EXPENDED = 0x01
# The Heart Rate Service's own ATT error code for a Control Point value it does not support.
CONTROL_POINT_NOT_SUPPORTED = 0x80
ENABLE_NOTIFICATIONS = bytes([0x01, 0x00])

FLAG_UINT16 = 0x01
FLAG_CONTACT_DETECTED = 0x02
FLAG_CONTACT_SUPPORTED = 0x04
FLAG_ENERGY = 0x08
FLAG_RR = 0x10

# Contact states, named as the Swift core's `SensorContact` renders them in traces.
NOT_SUPPORTED = "not_supported"
NOT_DETECTED = "not_detected"
DETECTED = "detected"

SCENARIOS = ("clean", "contact-lost", "silent")


@dataclass(frozen=True)
class Measurement:
    """One Heart Rate Measurement value. `wide` keeps the 16-bit form for values that would fit
    in 8 bits, because sensors may send it and the rig must be able to produce it."""

    heart_rate: int
    wide: bool = False
    contact: str = NOT_SUPPORTED
    energy_expended: int | None = None
    rr_intervals: tuple[int, ...] = field(default_factory=tuple)


class MeasurementError(ValueError):
    """A value too short for what its flags announce: `field` needed `needed` bytes at `offset`."""

    def __init__(self, field_name: str, offset: int, needed: int, available: int):
        super().__init__(f"{field_name} at offset {offset} needs {needed} byte(s), {available} left")
        self.field = field_name
        self.offset = offset
        self.needed = needed
        self.available = available


def encode_measurement(m: Measurement) -> bytes:
    """The characteristic value a strap notifies for `m`. A heart rate above 255 always takes the
    16-bit form; the RR flag is set exactly when there are intervals."""
    wide = m.wide or m.heart_rate > 0xFF
    flags = FLAG_UINT16 if wide else 0
    if m.contact == DETECTED:
        flags |= FLAG_CONTACT_SUPPORTED | FLAG_CONTACT_DETECTED
    elif m.contact == NOT_DETECTED:
        flags |= FLAG_CONTACT_SUPPORTED
    elif m.contact != NOT_SUPPORTED:
        raise ValueError(f"contact {m.contact!r}: expected {NOT_SUPPORTED}, {NOT_DETECTED} or {DETECTED}")
    if m.energy_expended is not None:
        flags |= FLAG_ENERGY
    if m.rr_intervals:
        flags |= FLAG_RR
    out = bytearray([flags])
    out += struct.pack("<H", m.heart_rate) if wide else bytes([m.heart_rate])
    if m.energy_expended is not None:
        out += struct.pack("<H", m.energy_expended)
    for interval in m.rr_intervals:
        out += struct.pack("<H", interval)
    return bytes(out)


def decode_measurement(value: bytes) -> Measurement:
    """Decodes a Heart Rate Measurement value; raises MeasurementError with the offset of the field
    that runs out of bytes. Reserved flag bits are ignored, as a client must."""
    offset = 0

    def take(name: str, size: int) -> int:
        nonlocal offset
        if len(value) - offset < size:
            raise MeasurementError(name, offset, size, len(value) - offset)
        chunk = value[offset : offset + size]
        offset += size
        return chunk[0] if size == 1 else struct.unpack("<H", chunk)[0]

    flags = take("flags", 1)
    wide = bool(flags & FLAG_UINT16)
    heart_rate = take("heart_rate", 2 if wide else 1)
    if not flags & FLAG_CONTACT_SUPPORTED:
        contact = NOT_SUPPORTED
    else:
        contact = DETECTED if flags & FLAG_CONTACT_DETECTED else NOT_DETECTED
    energy = take("energy_expended", 2) if flags & FLAG_ENERGY else None
    intervals = []
    if flags & FLAG_RR:
        intervals.append(take("rr_interval", 2))  # the flag promises at least one
        while offset < len(value):
            intervals.append(take("rr_interval", 2))
    return Measurement(heart_rate, wide, contact, energy, tuple(intervals))


def describe(m: Measurement) -> str:
    """One short line for logs."""
    parts = [f"{m.heart_rate} bpm{' (u16)' if m.wide else ''}", f"contact={m.contact}"]
    if m.energy_expended is not None:
        parts.append(f"energy={m.energy_expended} kJ")
    if m.rr_intervals:
        parts.append("rr=" + ",".join(str(i) for i in m.rr_intervals))
    return " ".join(parts)


@dataclass(frozen=True)
class Tick:
    """What the strap measures at one notification: the energy counter is the strap's state (the
    Control Point resets it), so a tick only says whether to include it and how much was spent."""

    heart_rate: int
    wide: bool
    contact: str
    rr_intervals: tuple[int, ...]
    include_energy: bool
    energy_spent: int  # kJ added to the counter at this tick


def schedule(scenario: str, seed: int, contact_lost_at: int = 4, contact_lost_for: int = 3, silent_after: int = 3):
    """The strap's measurements for `scenario`, one Tick per notification interval, deterministic
    from `seed`. A finite generator means the strap stops notifying (the `silent` scenario).

    clean: heart rate a seeded random walk, every 5th value (n % 5 == 2) in the 16-bit form, one or
    two RR intervals consistent with the rate, Energy Expended on every 10th (n % 10 == 0),
    contact supported and detected.
    contact-lost: the same, but contact not detected for ticks [contact_lost_at, +contact_lost_for),
    with no RR intervals then (no beats are seen without skin contact).
    silent: `silent_after` ticks of clean, then nothing.
    """
    if scenario not in SCENARIOS:
        raise ValueError(f"scenario {scenario!r}: expected one of {', '.join(SCENARIOS)}")
    rng = random.Random(seed)
    heart_rate = 66 + rng.randint(0, 10)
    n = 0
    while scenario != "silent" or n < silent_after:
        heart_rate = min(190, max(45, heart_rate + rng.randint(-3, 3)))
        beat = round(60 * 1024 / heart_rate)
        rr = tuple(beat + rng.randint(-25, 25) for _ in range(rng.choice((1, 1, 2))))
        contact = DETECTED
        if scenario == "contact-lost" and contact_lost_at <= n < contact_lost_at + contact_lost_for:
            contact, rr = NOT_DETECTED, ()
        yield Tick(heart_rate, n % 5 == 2, contact, rr, n % 10 == 0, max(1, heart_rate // 40))
        n += 1
