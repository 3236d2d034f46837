"""Times a GATT server's answers at its HCI transport: from the moment an ATT Write Request or Write
Command reaches the host (an ACL packet from the controller) to the moment the host hands the
controller its first answer (the Write Response, an error, or a notification or indication), in
CLOCK_MONOTONIC nanoseconds. Used by `emulate_bridge.py --latency-log` and `gatt_sensor.py
--latency-log` for CI/bench/emulate-latency, so the emulator and Bumble's own GATT server are timed
at the same place.

Each measured write becomes one line `ARRIVED_NS LEFT_NS OPCODE` (OPCODE: the answer's ATT opcode in
hex) in the log. Only ACL packets on the ATT channel (CID 4) whose first fragment holds the whole
ATT opcode are read; everything else passes through untouched.
"""

import time

ATT_CID = 0x0004
WRITES = {0x12, 0x52}
ANSWERS = {0x01, 0x13, 0x1B, 0x1D}


def att_opcode(packet: bytes):
    """The ATT opcode of an H4 ACL packet on CID 4 (a first fragment), else None."""
    if len(packet) < 10 or packet[0] != 0x02:
        return None
    if (packet[2] >> 4) & 0x03 == 0x01:  # a continuation fragment
        return None
    if packet[7] | packet[8] << 8 != ATT_CID:
        return None
    return packet[9]


class _Inbound:
    def __init__(self, probe, sink):
        self.probe, self.sink = probe, sink

    def on_packet(self, packet):
        if att_opcode(packet) in WRITES:
            self.probe.pending.append(time.monotonic_ns())
        self.sink.on_packet(packet)


class _Outbound:
    def __init__(self, probe, sink):
        self.probe, self.sink = probe, sink

    def on_packet(self, packet):
        opcode = att_opcode(packet)
        if opcode in ANSWERS and self.probe.pending:
            arrived = self.probe.pending.pop(0)
            self.probe.log.write(f"{arrived} {time.monotonic_ns()} {opcode:02x}\n")
        self.sink.on_packet(packet)


class LatencyProbe:
    """Wraps a Bumble transport's source and sink (install before the host uses them)."""

    def __init__(self, path: str):
        self.log = open(path, "w", buffering=1)
        self.pending: list[int] = []

    def sink(self, sink):
        """The sink to give the host instead of the transport's."""
        return _Outbound(self, sink)

    def attach_source(self, source):
        """Puts the probe between the transport's source and the sink the host set on it."""
        source.set_packet_sink(_Inbound(self, source.sink))

    def close(self):
        self.log.close()
