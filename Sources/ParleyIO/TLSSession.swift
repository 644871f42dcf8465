internal import COpenSSL
import Foundation

/// One TLS session over memory BIOs: the connection reads ciphertext from its socket and `feed`s it in, and writes
/// out what `takeOutput` hands back, so every socket call stays Parley's own (non-blocking, MSG_NOSIGNAL) and
/// OpenSSL never sees a descriptor. Loop-confined, like its connection; `SSL_free` in deinit frees both BIOs.
package final class TLSSession {
    /// How a handshake step ended.
    package enum HandshakeProgress: Equatable {
        case complete
        /// More bytes from the peer are needed.
        case needsInput
        case failed(String)
    }

    /// How a read of decrypted bytes ended.
    package enum ReadProgress: Equatable {
        case bytes(Int)
        /// Nothing more until more ciphertext arrives.
        case needsInput
        /// The peer sent close_notify.
        case closed
        case failed(String)
    }

    private let ssl: OpaquePointer
    private let networkIn: OpaquePointer
    private let networkOut: OpaquePointer
    /// Kept so the context outlives the session (OpenSSL counts its own reference too).
    private let context: TLSContext
    /// The name a client checks the certificate against, for its errors.
    private let expectedName: String?

    /// A server session (`expectedName` nil), or a client session that sends `serverName` as SNI when it is a DNS
    /// name and, when the context verifies, checks the certificate against `expectedName` (DNS name or IP).
    package init(context: TLSContext, isServer: Bool, expectedName: String?, sniName: String?) throws(TLSError) {
        self.context = context
        self.expectedName = isServer ? nil : expectedName
        ERR_clear_error()
        guard let ssl = SSL_new(context.pointer) else {
            throw .system(IOError("SSL_new (\(OpenSSLErrors.take(or: "out of memory")))", code: ENOMEM))
        }
        guard let input = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw .system(IOError("BIO_new", code: ENOMEM))
        }
        guard let output = BIO_new(BIO_s_mem()) else {
            BIO_free(input)
            SSL_free(ssl)
            throw .system(IOError("BIO_new", code: ENOMEM))
        }
        copenssl_bio_retry_when_empty(input)
        copenssl_bio_retry_when_empty(output)
        SSL_set_bio(ssl, input, output)
        self.ssl = ssl
        networkIn = input
        networkOut = output
        if isServer {
            SSL_set_accept_state(ssl)
            return
        }
        SSL_set_connect_state(ssl)
        if let sniName, IPAddress(sniName) == nil {
            _ = copenssl_set_server_name(ssl, sniName)
        }
        if context.verifiesPeer, let expectedName {
            let accepted =
                IPAddress(expectedName) != nil
                ? copenssl_expect_ip(ssl, expectedName) : SSL_set1_host(ssl, expectedName)
            guard accepted == 1 else {
                throw .uncheckableName(expectedName)
            }
        }
    }

    deinit {
        SSL_free(ssl)
    }

    /// Hands ciphertext from the socket to OpenSSL (a memory BIO takes it all).
    package func feed(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        let written = BIO_write(networkIn, base, Int32(bytes.count))
        precondition(written == Int32(bytes.count), "memory BIO refused \(bytes.count) bytes")
    }

    /// Moves the handshake on as far as the input allows.
    package func handshake() -> HandshakeProgress {
        ERR_clear_error()
        let result = SSL_do_handshake(ssl)
        if result == 1 { return .complete }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return .needsInput
        default:
            return .failed(failureReason())
        }
    }

    /// Decrypts into `buffer`.
    package func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadProgress {
        ERR_clear_error()
        let count = SSL_read(ssl, buffer.baseAddress, Int32(clamping: buffer.count))
        if count > 0 { return .bytes(Int(count)) }
        switch SSL_get_error(ssl, count) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return .needsInput
        case SSL_ERROR_ZERO_RETURN:
            return .closed
        default:
            return .failed(failureReason())
        }
    }

    /// Encrypts all of `bytes` (a memory BIO never pushes back); nil on success, the reason on failure.
    package func write(_ bytes: Data) -> String? {
        guard !bytes.isEmpty else { return nil }
        ERR_clear_error()
        let result = bytes.withUnsafeBytes { raw in
            SSL_write(ssl, raw.baseAddress, Int32(clamping: raw.count))
        }
        return result == Int32(bytes.count) ? nil : failureReason()
    }

    /// Queues close_notify (sent by the next `takeOutput`); the peer's is not waited for.
    package func shutdown() {
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }

    /// The ciphertext OpenSSL produced since the last call, or nil.
    package func takeOutput() -> Data? {
        let pending = copenssl_bio_pending(networkOut)
        guard pending > 0 else { return nil }
        var output = Data(count: Int(pending))
        let read = output.withUnsafeMutableBytes { raw in
            BIO_read(networkOut, raw.baseAddress, Int32(clamping: raw.count))
        }
        precondition(read == Int32(pending), "memory BIO gave \(read) of \(pending) bytes")
        return output
    }

    /// Why the last call failed: the certificate check's verdict if that was it, else OpenSSL's error queue.
    private func failureReason() -> String {
        let queue = OpenSSLErrors.take(or: "connection failed")
        // Without verification the verdict is computed but not enforced, so it cannot be why the call failed.
        let verdict = SSL_get_verify_result(ssl)
        guard context.verifiesPeer, verdict != X509_V_OK else { return queue }
        let name = expectedName.map { " for \($0)" } ?? ""
        let why = String(cString: X509_verify_cert_error_string(verdict))
        return "certificate verification failed\(name): \(why) (trusting \(context.trustedCAs))"
    }
}
