import Foundation
import SIPSignaling

/// Small, slow, test-only MD5 (RFC 1321), SHA-256 and SHA-512/256 (FIPS 180-4), so that the Digest tests need no crypto
/// library. Checked against the standards' own test vectors in `DigestAuthorizationTests`.
enum TestHashes {
    /// The `DigestHash` the tests inject.
    static let digest: DigestHash = { algorithm, input in
        let bytes = Array(input.utf8)
        switch algorithm {
        case .md5, .md5Session: return hex(md5(bytes))
        case .sha256, .sha256Session: return hex(sha256(bytes))
        case .sha512_256, .sha512_256Session: return hex(sha512(bytes, initial: sha512_256Initial).prefix(32))
        }
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        bytes.map { String($0 >> 4, radix: 16) + String($0 & 0xF, radix: 16) }.joined()
    }

    /// The message padded to a multiple of `block` bytes with its bit length at the end (`lengthBytes` wide).
    private static func padded(_ message: [UInt8], block: Int, lengthBytes: Int, bigEndian: Bool) -> [UInt8] {
        var data = message
        data.append(0x80)
        while data.count % block != block - lengthBytes { data.append(0) }
        let bits = UInt64(message.count) * 8
        var length = (0..<8).map { UInt8(truncatingIfNeeded: bits >> (8 * UInt64($0))) }  // little-endian
        length += Array(repeating: 0, count: lengthBytes - 8)
        data += bigEndian ? length.reversed() : length
        return data
    }

    // MARK: MD5

    private static let md5Shifts: [UInt32] = [
        7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20,
        4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15,
        21,
    ]
    /// K[i] = floor(|sin(i + 1)| · 2^32), as RFC 1321 §3.4 defines them.
    private static let md5Constants: [UInt32] = (0..<64).map { index in
        UInt32(truncatingIfNeeded: Int64(abs(sin(Double(index + 1))) * 4_294_967_296))
    }

    static func md5(_ message: [UInt8]) -> [UInt8] {
        var state: [UInt32] = [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476]
        let data = padded(message, block: 64, lengthBytes: 8, bigEndian: false)
        for chunk in stride(from: 0, to: data.count, by: 64) {
            let words = (0..<16).map { index in
                (0..<4).reduce(UInt32(0)) { $0 | UInt32(data[chunk + 4 * index + $1]) << (8 * UInt32($1)) }
            }
            var (a, b, c, d) = (state[0], state[1], state[2], state[3])
            for round in 0..<64 {
                var f: UInt32
                let g: Int
                switch round {
                case 0..<16: (f, g) = ((b & c) | (~b & d), round)
                case 16..<32: (f, g) = ((d & b) | (~d & c), (5 * round + 1) % 16)
                case 32..<48: (f, g) = (b ^ c ^ d, (3 * round + 5) % 16)
                default: (f, g) = (c ^ (b | ~d), (7 * round) % 16)
                }
                f = f &+ a &+ md5Constants[round] &+ words[g]
                (a, d, c) = (d, c, b)
                b = b &+ rotateLeft(f, md5Shifts[round])
            }
            state = [state[0] &+ a, state[1] &+ b, state[2] &+ c, state[3] &+ d]
        }
        return state.flatMap { word in (0..<4).map { UInt8(truncatingIfNeeded: word >> (8 * UInt32($0))) } }
    }

    private static func rotateLeft(_ value: UInt32, _ count: UInt32) -> UInt32 {
        (value << count) | (value >> (32 - count))
    }

    // MARK: SHA-256

    private static let sha256Constants: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
        0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
        0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
        0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
        0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
        0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
        0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ]

    static func sha256(_ message: [UInt8]) -> [UInt8] {
        var state: [UInt32] = [
            0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
        ]
        let data = padded(message, block: 64, lengthBytes: 8, bigEndian: true)
        func rotr(_ x: UInt32, _ n: UInt32) -> UInt32 { (x >> n) | (x << (32 - n)) }
        for chunk in stride(from: 0, to: data.count, by: 64) {
            var w = (0..<16).map { index in
                (0..<4).reduce(UInt32(0)) { $0 << 8 | UInt32(data[chunk + 4 * index + $1]) }
            }
            for t in 16..<64 {
                let s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3)
                let s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10)
                w.append(w[t - 16] &+ s0 &+ w[t - 7] &+ s1)
            }
            var v = state
            for t in 0..<64 {
                let s1 = rotr(v[4], 6) ^ rotr(v[4], 11) ^ rotr(v[4], 25)
                let choice = (v[4] & v[5]) ^ (~v[4] & v[6])
                let t1 = v[7] &+ s1 &+ choice &+ sha256Constants[t] &+ w[t]
                let s0 = rotr(v[0], 2) ^ rotr(v[0], 13) ^ rotr(v[0], 22)
                let majority = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2])
                v = [t1 &+ s0 &+ majority, v[0], v[1], v[2], v[3] &+ t1, v[4], v[5], v[6]]
            }
            state = zip(state, v).map { $0 &+ $1 }
        }
        return state.flatMap { word in (0..<4).reversed().map { UInt8(truncatingIfNeeded: word >> (8 * UInt32($0))) } }
    }

    // MARK: SHA-512 (and SHA-512/256 through its initial values)

    private static let sha512Constants: [UInt64] = [
        0x428a2f98d728ae22, 0x7137449123ef65cd, 0xb5c0fbcfec4d3b2f, 0xe9b5dba58189dbbc, 0x3956c25bf348b538,
        0x59f111f1b605d019, 0x923f82a4af194f9b, 0xab1c5ed5da6d8118, 0xd807aa98a3030242, 0x12835b0145706fbe,
        0x243185be4ee4b28c, 0x550c7dc3d5ffb4e2, 0x72be5d74f27b896f, 0x80deb1fe3b1696b1, 0x9bdc06a725c71235,
        0xc19bf174cf692694, 0xe49b69c19ef14ad2, 0xefbe4786384f25e3, 0x0fc19dc68b8cd5b5, 0x240ca1cc77ac9c65,
        0x2de92c6f592b0275, 0x4a7484aa6ea6e483, 0x5cb0a9dcbd41fbd4, 0x76f988da831153b5, 0x983e5152ee66dfab,
        0xa831c66d2db43210, 0xb00327c898fb213f, 0xbf597fc7beef0ee4, 0xc6e00bf33da88fc2, 0xd5a79147930aa725,
        0x06ca6351e003826f, 0x142929670a0e6e70, 0x27b70a8546d22ffc, 0x2e1b21385c26c926, 0x4d2c6dfc5ac42aed,
        0x53380d139d95b3df, 0x650a73548baf63de, 0x766a0abb3c77b2a8, 0x81c2c92e47edaee6, 0x92722c851482353b,
        0xa2bfe8a14cf10364, 0xa81a664bbc423001, 0xc24b8b70d0f89791, 0xc76c51a30654be30, 0xd192e819d6ef5218,
        0xd69906245565a910, 0xf40e35855771202a, 0x106aa07032bbd1b8, 0x19a4c116b8d2d0c8, 0x1e376c085141ab53,
        0x2748774cdf8eeb99, 0x34b0bcb5e19b48a8, 0x391c0cb3c5c95a63, 0x4ed8aa4ae3418acb, 0x5b9cca4f7763e373,
        0x682e6ff3d6b2b8a3, 0x748f82ee5defb2fc, 0x78a5636f43172f60, 0x84c87814a1f0ab72, 0x8cc702081a6439ec,
        0x90befffa23631e28, 0xa4506cebde82bde9, 0xbef9a3f7b2c67915, 0xc67178f2e372532b, 0xca273eceea26619c,
        0xd186b8c721c0c207, 0xeada7dd6cde0eb1e, 0xf57d4f7fee6ed178, 0x06f067aa72176fba, 0x0a637dc5a2c898a6,
        0x113f9804bef90dae, 0x1b710b35131c471b, 0x28db77f523047d84, 0x32caab7b40c72493, 0x3c9ebe0a15c9bebc,
        0x431d67c49c100d4c, 0x4cc5d4becb3e42b6, 0x597f299cfc657e2a, 0x5fcb6fab3ad6faec, 0x6c44198c4a475817,
    ]

    /// The SHA-512/256 initial hash values (FIPS 180-4 §5.3.6.2).
    static let sha512_256Initial: [UInt64] = [
        0x22312194fc2bf72c, 0x9f555fa3c84c64c2, 0x2393b86b6f53b151, 0x963877195940eabd, 0x96283ee2a88effe3,
        0xbe5e1e2553863992, 0x2b0199fc2c85b8aa, 0x0eb72ddc81c52ca2,
    ]

    /// The SHA-512 initial hash values (FIPS 180-4 §5.3.5).
    static let sha512Initial: [UInt64] = [
        0x6a09e667f3bcc908, 0xbb67ae8584caa73b, 0x3c6ef372fe94f82b, 0xa54ff53a5f1d36f1, 0x510e527fade682d1,
        0x9b05688c2b3e6c1f, 0x1f83d9abfb41bd6b, 0x5be0cd19137e2179,
    ]

    static func sha512(_ message: [UInt8], initial: [UInt64]) -> [UInt8] {
        var state = initial
        let data = padded(message, block: 128, lengthBytes: 16, bigEndian: true)
        func rotr(_ x: UInt64, _ n: UInt64) -> UInt64 { (x >> n) | (x << (64 - n)) }
        for chunk in stride(from: 0, to: data.count, by: 128) {
            var w = (0..<16).map { index in
                (0..<8).reduce(UInt64(0)) { $0 << 8 | UInt64(data[chunk + 8 * index + $1]) }
            }
            for t in 16..<80 {
                let s0 = rotr(w[t - 15], 1) ^ rotr(w[t - 15], 8) ^ (w[t - 15] >> 7)
                let s1 = rotr(w[t - 2], 19) ^ rotr(w[t - 2], 61) ^ (w[t - 2] >> 6)
                w.append(w[t - 16] &+ s0 &+ w[t - 7] &+ s1)
            }
            var v = state
            for t in 0..<80 {
                let s1 = rotr(v[4], 14) ^ rotr(v[4], 18) ^ rotr(v[4], 41)
                let choice = (v[4] & v[5]) ^ (~v[4] & v[6])
                let t1 = v[7] &+ s1 &+ choice &+ sha512Constants[t] &+ w[t]
                let s0 = rotr(v[0], 28) ^ rotr(v[0], 34) ^ rotr(v[0], 39)
                let majority = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2])
                v = [t1 &+ s0 &+ majority, v[0], v[1], v[2], v[3] &+ t1, v[4], v[5], v[6]]
            }
            state = zip(state, v).map { $0 &+ $1 }
        }
        return state.flatMap { word in (0..<8).reversed().map { UInt8(truncatingIfNeeded: word >> (8 * UInt64($0))) } }
    }
}
