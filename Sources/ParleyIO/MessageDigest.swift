internal import COpenSSL
import Foundation

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
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)

    /// `count` random bytes.
    public static func bytes(_ count: Int) -> [UInt8] {
        precondition(count >= 0, "negative byte count")
        var bytes = [UInt8](repeating: 0, count: count)
        guard count > 0 else { return bytes }
        // RAND_bytes fails only when the system cannot seed a CSPRNG; no SIP identifier may be guessable, so stop.
        precondition(RAND_bytes(&bytes, Int32(count)) == 1, "RAND_bytes failed: \(OpenSSLErrors.take(or: "no entropy"))")
        return bytes
    }

    /// A token of `length` characters from [A-Za-z0-9], uniformly chosen (about 5.95 bits each).
    public static func token(_ length: Int) -> String {
        precondition(length >= 0, "negative token length")
        var result = [UInt8]()
        result.reserveCapacity(length)
        while result.count < length {
            // 248 = 4 × 62: bytes at or above it are dropped so every character is equally likely.
            for byte in bytes(length - result.count + 8) where byte < 248 && result.count < length {
                result.append(alphabet[Int(byte % 62)])
            }
        }
        return String(decoding: result, as: UTF8.self)
    }
}
