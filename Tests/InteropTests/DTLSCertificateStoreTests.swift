import Foundation
import ParleyIO
import ParleyNode
import Testing

/// The node's DTLS certificate on disk: made once (0600), the same on every later start, tightened when others may
/// read it, and replaced (the old kept) when it no longer reads.
@Suite("Node: the DTLS certificate in the data directory", .timeLimit(.minutes(1)))
struct DTLSCertificateStoreTests {
    static func store() throws -> (DTLSCertificateStore, URL) {
        let directory = FileManager.default.temporaryDirectory.appending(path: "parley-dtls-store-\(UUID().uuidString)")
        return (DTLSCertificateStore(dataDirectory: DataDirectory(path: directory.path, source: "test")), directory)
    }

    static func mode(_ path: String) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? -1
    }

    @Test("made once, 0600, its fingerprint in the note; loaded unchanged after; a copy others may read is tightened")
    func madeOnceAndKept() throws {
        let (store, directory) = try Self.store()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (made, note) = try store.loadOrCreate()
        #expect(note?.contains("\(made.fingerprint)") == true && Self.mode(store.path) == 0o600, "\(note ?? "-")")
        #expect(Self.mode((store.path as NSString).deletingLastPathComponent) == 0o700)
        chmod(store.path, 0o644)
        let (loaded, again) = try store.loadOrCreate()
        #expect(again == nil && loaded.fingerprint == made.fingerprint && loaded.pem == made.pem)
        #expect(Self.mode(store.path) == 0o600, "tightened")
    }

    @Test("a file that no longer reads is moved aside as .old and a new certificate made")
    func unreadableIsReplaced() throws {
        let (store, directory) = try Self.store()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (first, _) = try store.loadOrCreate()
        try "-----BEGIN CERTIFICATE-----\ngarbage\n-----END CERTIFICATE-----\n".write(toFile: store.path, atomically: true, encoding: .utf8)
        let (second, note) = try store.loadOrCreate()
        #expect(second.fingerprint != first.fingerprint)
        #expect(note?.contains(".old") == true, "\(note ?? "-")")
        #expect(FileManager.default.fileExists(atPath: store.path + ".old") && Self.mode(store.path) == 0o600)
    }
}
