import Foundation
import Synchronization

/// Version-4 UUIDs from a fast generator seeded once from the system's randomness.
///
/// Foundation's `UUID()` on Linux opens and reads `/dev/urandom` for every identifier (three system calls),
/// which dominated the engine's hot path. Conversation and action identifiers need uniqueness, not secrecy:
/// xoshiro256** seeded with 256 system-random bits gives that at a few nanoseconds each. Do not use these for
/// anything secret (tokens, nonces).
public enum RandomUUID {
    private static let generator = Mutex(Xoshiro256StarStar(seed: SystemRandomNumberGenerator()))

    /// A new random (version 4, RFC 9562 variant) UUID.
    public static func make() -> UUID {
        let (high, low) = randomWords()
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &bytes) { raw in
            raw.storeBytes(of: high.bigEndian, toByteOffset: 0, as: UInt64.self)
            raw.storeBytes(of: low.bigEndian, toByteOffset: 8, as: UInt64.self)
            raw[6] = (raw[6] & 0x0F) | 0x40  // version 4
            raw[8] = (raw[8] & 0x3F) | 0x80  // RFC 9562 variant
        }
        return UUID(uuid: bytes)
    }

    /// 128 bits from the generator.
    static func randomWords() -> (high: UInt64, low: UInt64) {
        generator.withLock { ($0.next(), $0.next()) }
    }
}

/// xoshiro256** (Blackman & Vigna): a small, fast, well-distributed generator.
struct Xoshiro256StarStar: RandomNumberGenerator, Sendable {
    private var state: (UInt64, UInt64, UInt64, UInt64)

    init(seed: some RandomNumberGenerator) {
        var source = seed
        repeat {
            state = (source.next(), source.next(), source.next(), source.next())
        } while state == (0, 0, 0, 0)
    }

    mutating func next() -> UInt64 {
        let result = rotate(state.1 &* 5, 7) &* 9
        let shifted = state.1 << 17
        state.2 ^= state.0
        state.3 ^= state.1
        state.1 ^= state.2
        state.0 ^= state.3
        state.2 ^= shifted
        state.3 = rotate(state.3, 45)
        return result
    }

    private func rotate(_ value: UInt64, _ count: UInt64) -> UInt64 {
        (value << count) | (value >> (64 - count))
    }
}
