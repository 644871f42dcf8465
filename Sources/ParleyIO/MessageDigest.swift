internal import COpenSSL
import Foundation
import Synchronization

/// Message digests as lowercase hex, through OpenSSL's EVP interface: MD5, SHA-256 and SHA-512/256, the algorithms of
/// SIP digest authentication (RFC 3261 §22.4, RFC 8760); and raw SHA-1, for the WebSocket handshake (RFC 6455 §4.2.2).
public enum MessageDigest {
    /// MD5 of `data` (32 hex digits).
    public static func md5(_ data: Data) -> String { hex(data, EVP_md5(), name: "MD5") }
    /// SHA-256 of `data` (64 hex digits).
    public static func sha256(_ data: Data) -> String { hex(data, EVP_sha256(), name: "SHA-256") }
    /// SHA-512/256 of `data` (64 hex digits), as RFC 8760 names it "SHA-512-256".
    public static func sha512_256(_ data: Data) -> String { hex(data, EVP_sha512_256(), name: "SHA-512/256") }

    /// SHA-1 of `data`: the raw 20 bytes. Only for the WebSocket handshake's `Sec-WebSocket-Accept`, where it
    /// proves the server read the key, not that anything is secret; SHA-1 is broken for anything that needs that.
    public static func sha1(_ data: Data) -> Data { Data(raw(data, EVP_sha1(), name: "SHA-1")) }

    private static func raw(_ data: Data, _ algorithm: OpaquePointer?, name: String) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let result = data.withUnsafeBytes { raw in
            EVP_Digest(raw.baseAddress, raw.count, &digest, &length, algorithm, nil)
        }
        // Debian's OpenSSL always provides these in its default provider; without them the system is broken.
        precondition(result == 1, "OpenSSL cannot compute \(name): \(OpenSSLErrors.take(or: "unavailable"))")
        return Array(digest.prefix(Int(length)))
    }

    private static func hex(_ data: Data, _ algorithm: OpaquePointer?, name: String) -> String {
        let digest = raw(data, algorithm, name: name)
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(digest.count * 2)
        for byte in digest {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

/// Random bytes and tokens from OpenSSL's CSPRNG (RAND_bytes): unguessable SIP tags, branches and Call-IDs.
public enum SecureRandom {
    /// Lowercase letters and digits only: no token can contain a header name, which all have a capital letter.
    /// Peers that look for a header with a plain substring search would find one inside a tag otherwise: sipp takes
    /// the first "CSeq" anywhere in a response for its CSeq header, so it aborted the calls (one in two million) whose
    /// To tag happened to contain "CSeq".
    private static let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789".utf8)

    /// `count` random bytes.
    public static func bytes(_ count: Int) -> [UInt8] {
        precondition(count >= 0, "negative byte count")
        var bytes = [UInt8](repeating: 0, count: count)
        guard count > 0 else { return bytes }
        // RAND_bytes fails only when the system cannot seed a CSPRNG; no SIP identifier may be guessable, so stop.
        precondition(RAND_bytes(&bytes, Int32(count)) == 1, "RAND_bytes failed: \(OpenSSLErrors.take(or: "no entropy"))")
        return bytes
    }

    /// A token of `length` characters from [a-z0-9], uniformly chosen (about 5.17 bits each: a 10-character tag holds
    /// 51 bits, RFC 3261 asks for 32). The random bytes come from `RAND_bytes` 256 at a time (`TokenPool`): one call
    /// per token cost about 6,700 instructions, a hundredth of all the work for one call, for the dozen bytes of a
    /// tag, branch or Call-ID.
    public static func token(_ length: Int) -> String {
        precondition(length >= 0, "negative token length")
        let process = getpid()
        return pool.withLock { pool in
            pool.keep(for: process)
            return String(unsafeUninitializedCapacity: length) { characters in
                var count = 0
                while count < length {
                    let byte = pool.next()
                    // 252 = 7 × 36: bytes at or above it are dropped so every character is equally likely.
                    guard byte < 252 else { continue }
                    characters[count] = alphabet[Int(byte % 36)]
                    count += 1
                }
                return length
            }
        }
    }

    private static let pool = Mutex(TokenPool())

    /// Random bytes drawn from OpenSSL in blocks, handed out one at a time; each is used once. A forked child
    /// starts a block of its own (it must not repeat its parent's tokens).
    private struct TokenPool: ~Copyable {
        private var block = [UInt8](repeating: 0, count: 256)
        private var used = 256
        private var owner: pid_t = 0

        /// Drops the rest of a block drawn by another process (the parent of a fork).
        mutating func keep(for process: pid_t) {
            if owner != process {
                owner = process
                used = block.count
            }
        }

        mutating func next() -> UInt8 {
            if used == block.count {
                let count = Int32(block.count)
                let filled = block.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, count) }
                precondition(filled == 1, "RAND_bytes failed: \(OpenSSLErrors.take(or: "no entropy"))")
                used = 0
            }
            defer { used += 1 }
            return block[used]
        }
    }
}
