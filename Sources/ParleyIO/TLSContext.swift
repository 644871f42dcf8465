internal import COpenSSL
import Glibc

/// OpenSSL's error queue of the calling thread, as one line (and emptied).
package enum OpenSSLErrors {
    /// Loads libssl's error strings once per process.
    package static let initialized: Bool = copenssl_initialize() == 1

    package static func take(or fallback: String) -> String {
        var reasons: [String] = []
        var buffer = [CChar](repeating: 0, count: 256)
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            ERR_error_string_n(code, &buffer, buffer.count)
            reasons.append(buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
        }
        return reasons.isEmpty ? fallback : reasons.joined(separator: "; ")
    }
}

/// An SSL_CTX: one for the server side of a transport (its certificate and key), one for the client side (how peers
/// are verified). Freed when the last session made from it is gone (sessions hold their own reference inside
/// OpenSSL; this object holds one more). Sendable: once made it is only read, and OpenSSL makes sessions from one
/// context on any thread.
package final class TLSContext: @unchecked Sendable {
    let pointer: OpaquePointer
    /// Whether sessions made from this context verify their peer (client side with `verifyPeer`).
    package let verifiesPeer: Bool
    /// The CAs a client context trusts, in words for errors: the file `--tls-ca` named, else the system's.
    package private(set) var trustedCAs = "the system's CAs"

    private init(server: Bool, verifiesPeer: Bool) throws(TLSError) {
        _ = OpenSSLErrors.initialized
        ERR_clear_error()
        guard let context = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method()) else {
            throw .system(IOError("SSL_CTX_new (\(OpenSSLErrors.take(or: "out of memory")))", code: ENOMEM))
        }
        pointer = context
        self.verifiesPeer = verifiesPeer
        guard copenssl_ctx_prepare(context) == 1 else {
            throw .system(IOError("TLS 1.2 minimum and its cipher list (\(OpenSSLErrors.take(or: "refused")))", code: EINVAL))
        }
    }

    deinit {
        SSL_CTX_free(pointer)
    }

    /// The server context: certificate chain and private key from PEM files, checked against each other.
    package static func server(_ configuration: TLSConfiguration) throws(TLSError) -> TLSContext {
        guard let certificatePath = configuration.certificatePath, let keyPath = configuration.privateKeyPath else {
            throw .certificateMissing
        }
        let context = try TLSContext(server: true, verifiesPeer: false)
        try context.useIdentity(certificatePath: certificatePath, keyPath: keyPath)
        return context
    }

    /// The client context: verification against `caFilePath` (or the system's CAs) when `verifyPeer`, and the
    /// configured certificate if there is one (presented when a server asks).
    package static func client(_ configuration: TLSConfiguration) throws(TLSError) -> TLSContext {
        let context = try TLSContext(server: false, verifiesPeer: configuration.verifyPeer)
        if configuration.verifyPeer {
            SSL_CTX_set_verify(context.pointer, SSL_VERIFY_PEER, nil)
            if let caPath = configuration.caFilePath {
                context.trustedCAs = "the CAs in \(caPath)"
                try checkReadable(caPath)
                guard SSL_CTX_load_verify_locations(context.pointer, caPath, nil) == 1 else {
                    throw .file(path: caPath, reason: OpenSSLErrors.take(or: "no CA certificates in it"))
                }
            } else if SSL_CTX_set_default_verify_paths(context.pointer) != 1 {
                throw .system(IOError("loading the system CA certificates (\(OpenSSLErrors.take(or: "?")))", code: ENOENT))
            }
        } else {
            SSL_CTX_set_verify(context.pointer, SSL_VERIFY_NONE, nil)
        }
        if let certificatePath = configuration.certificatePath, let keyPath = configuration.privateKeyPath {
            try context.useIdentity(certificatePath: certificatePath, keyPath: keyPath)
        }
        return context
    }

    /// The DNS names and IP addresses the certificate a server context presents is for (its subjectAltNames), in
    /// order; wildcard names as written.
    package var certificateNames: [String] {
        var names: [String] = []
        var buffer = [CChar](repeating: 0, count: 256)
        for index in 0..<64 {
            let length = copenssl_certificate_name(pointer, Int32(index), &buffer, buffer.count)
            if length < 0 { break }
            if length > 0 { names.append(buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }) }
        }
        return names
    }

    private func useIdentity(certificatePath: String, keyPath: String) throws(TLSError) {
        try Self.checkReadable(certificatePath)
        try Self.checkReadable(keyPath)
        ERR_clear_error()
        guard SSL_CTX_use_certificate_chain_file(pointer, certificatePath) == 1 else {
            throw .file(path: certificatePath, reason: OpenSSLErrors.take(or: "not a PEM certificate"))
        }
        guard SSL_CTX_use_PrivateKey_file(pointer, keyPath, copenssl_filetype_pem()) == 1 else {
            if copenssl_error_is_key_mismatch(ERR_peek_last_error()) != 0 {
                ERR_clear_error()
                throw .keyMismatch(certificatePath: certificatePath, privateKeyPath: keyPath)
            }
            throw .file(path: keyPath, reason: OpenSSLErrors.take(or: "not a PEM private key"))
        }
        guard SSL_CTX_check_private_key(pointer) == 1 else {
            ERR_clear_error()
            throw .keyMismatch(certificatePath: certificatePath, privateKeyPath: keyPath)
        }
    }

    /// A clear error for a file that is missing or unreadable, before OpenSSL's less direct one.
    private static func checkReadable(_ path: String) throws(TLSError) {
        guard access(path, R_OK) == 0 else {
            throw .file(path: path, reason: "\(IOError.text(errno)) (errno \(errno))")
        }
    }
}
