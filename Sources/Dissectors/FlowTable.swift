/// A hash table from TCP flow keys to values: open addressing, linear probing, backward-shift
/// deletion. Flow keys are looked up twice per segment (reassembly and MQTT); `Dictionary` hashes
/// each through SipHash, which took a tenth of the dissection time. The key's folded word is mixed
/// with one multiplication instead; keys come from captures, and a skewed capture can only make
/// probing slower, never wrong. Grows at half full; the callers bound how many keys they hold.
struct FlowTable<Value> {
    private var keys: [TCPFlowKey?]
    private var values: [Value?]
    private var mask: Int
    /// Keys held.
    private(set) var count = 0

    /// An empty table.
    init() {
        keys = Array(repeating: nil, count: 64)
        values = Array(repeating: nil, count: 64)
        mask = 63
    }

    private func home(_ key: TCPFlowKey) -> Int {
        let mixed = key.foldedWord &* 0x9E37_79B9_7F4A_7C15
        return Int(truncatingIfNeeded: mixed >> 32) & mask
    }

    /// The slot holding `key`, or the empty slot where it would go.
    private func slot(of key: TCPFlowKey) -> (index: Int, found: Bool) {
        var index = home(key)
        while let stored = keys[index] {
            if stored == key { return (index, true) }
            index = (index &+ 1) & mask
        }
        return (index, false)
    }

    /// The value for `key`; setting `nil` removes it.
    subscript(key: TCPFlowKey) -> Value? {
        get {
            let (index, found) = slot(of: key)
            return found ? values[index] : nil
        }
        set {
            guard let newValue else {
                removeValue(forKey: key)
                return
            }
            var (index, found) = slot(of: key)
            if !found {
                if (count + 1) * 2 > keys.count {
                    grow()
                    index = slot(of: key).index
                }
                keys[index] = key
                count += 1
            }
            values[index] = newValue
        }
    }

    /// Runs `body` on the value for `key` where it lies, `nil` when the key is absent: setting a
    /// value inserts it, setting `nil` removes it. One probe, and the value is never moved, so its
    /// buffers stay uniquely owned while `body` changes them.
    mutating func withValue<Result>(forKey key: TCPFlowKey, _ body: (inout Value?) -> Result) -> Result {
        let (index, found) = slot(of: key)
        if found {
            let result = body(&values[index])
            if values[index] == nil { removeValue(forKey: key) }
            return result
        }
        var fresh: Value? = nil
        let result = body(&fresh)
        if let fresh { self[key] = fresh }
        return result
    }

    /// Removes `key`, returning its value (moved out, so the caller owns it uniquely).
    @discardableResult
    mutating func removeValue(forKey key: TCPFlowKey) -> Value? {
        let (found, present) = slot(of: key)
        guard present else { return nil }
        let value = values[found].take()
        keys[found] = nil
        count -= 1
        // Backward shift: pull later keys of the same run into the hole, so lookups never stop early.
        var hole = found
        var next = (hole &+ 1) & mask
        while let key = keys[next] {
            let ideal = home(key)
            let movable = hole <= next ? (ideal <= hole || ideal > next) : (ideal <= hole && ideal > next)
            if movable {
                keys[hole] = key
                values[hole] = values[next].take()
                keys[next] = nil
                hole = next
            }
            next = (next &+ 1) & mask
        }
        return value
    }

    /// Every key with its value, in no particular order.
    var entries: some Sequence<(key: TCPFlowKey, value: Value)> {
        zip(keys, values).lazy.compactMap { key, value in
            guard let key, let value else { return nil }
            return (key, value)
        }
    }

    private mutating func grow() {
        let old = zip(keys, values).compactMap { key, value -> (TCPFlowKey, Value)? in
            guard let key, let value else { return nil }
            return (key, value)
        }
        let capacity = keys.count * 2
        keys = Array(repeating: nil, count: capacity)
        values = Array(repeating: nil, count: capacity)
        mask = capacity - 1
        count = 0
        for (key, value) in old { self[key] = value }
    }
}

extension FlowTable: Sendable where Value: Sendable {}
