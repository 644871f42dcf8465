import Foundation

/// SplitMix64 (Steele, Lea, Flood 2014): a tiny seeded generator, so every run writes the same history and
/// runs are comparable. Not for anything but benchmark data.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    mutating func unit() -> Double { Double(next() >> 11) * 0x1p-53 }

    /// Uniform in 0..<bound (the modulo bias is below 2⁻⁴⁰ for the bounds used here).
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }

    /// True with probability `probability`.
    mutating func chance(_ probability: Double) -> Bool { unit() < probability }

    /// Exponentially distributed with this mean.
    mutating func exponential(mean: Double) -> Double { -log1p(-unit()) * mean }

    /// One element, uniformly.
    mutating func pick<T>(_ elements: [T]) -> T { elements[below(elements.count)] }

    /// A version-4 UUID made from the stream (little-endian layout of two words).
    mutating func uuid() -> UUID {
        var high = next(), low = next()
        high = (high & ~(UInt64(0xF0) << 48)) | (UInt64(0x40) << 48)  // byte 6: version 4
        low = (low & ~UInt64(0xC0)) | UInt64(0x80)  // byte 8: RFC 4122 variant
        return UUID(uuid: unsafeBitCast((high.littleEndian, low.littleEndian), to: uuid_t.self))
    }

    /// Lowercase hex digits of one word.
    mutating func hex() -> String {
        let text = String(next(), radix: 16)
        return String(repeating: "0", count: 16 - text.count) + text
    }
}

/// Draws ranks 0..<count with probability ∝ 1 / (rank + 1)^exponent (Zipf), by binary search in the
/// cumulative weights.
struct ZipfSampler {
    private let cumulative: [Double]

    init(count: Int, exponent: Double) {
        var total = 0.0
        cumulative = (1...count).map { rank in
            total += 1 / pow(Double(rank), exponent)
            return total
        }
    }

    /// The share of all draws that rank `rank` gets.
    func share(of rank: Int) -> Double {
        (cumulative[rank] - (rank == 0 ? 0 : cumulative[rank - 1])) / cumulative[cumulative.count - 1]
    }

    func draw(using random: inout SplitMix64) -> Int {
        let target = random.unit() * cumulative[cumulative.count - 1]
        var low = 0, high = cumulative.count - 1
        while low < high {
            let middle = (low + high) / 2
            if cumulative[middle] > target { high = middle } else { low = middle + 1 }
        }
        return low
    }
}
