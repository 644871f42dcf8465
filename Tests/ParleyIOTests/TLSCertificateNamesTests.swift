import Foundation
import ParleyTestSupport
import Testing

@testable import ParleyIO

/// The names a server certificate is for (its subjectAltNames), as the WebSocket listener serves its pages under them.
@Suite("ParleyIO: a TLS server certificate's names", .timeLimit(.minutes(1)))
struct TLSCertificateNamesTests {
    @Test("DNS names and IP addresses in order (IPv6 as text), wildcards as written; none without the extension")
    func names() throws {
        let files = try TLSCertificateFiles.make(subjectAltName: "DNS:phone.example.org,IP:192.0.2.7,DNS:*.example.org,IP:2001:db8::1,email:a@b.c")
        let context = try TLSContext.server(TLSConfiguration(certificatePath: files.certificate, privateKeyPath: files.key))
        #expect(context.certificateNames == ["phone.example.org", "192.0.2.7", "*.example.org", "2001:db8::1"])
        let bare = try TLSCertificateFiles.make()
        let plain = try TLSContext.server(TLSConfiguration(certificatePath: bare.certificate, privateKeyPath: bare.key))
        #expect(plain.certificateNames.isEmpty)
    }
}
