import ControlChannel
import Foundation
import Glibc
import Testing

@Suite struct ControlTokenTests {
    @Test func createsAToken0600AndReusesIt() throws {
        let directory = TempDirectory()
        defer { directory.remove() }
        let token = try ControlToken.loadOrCreate(in: directory.path)
        #expect(token.count == 64)
        #expect(token.allSatisfy { "0123456789abcdef".contains($0) })
        var info = stat()
        #expect(stat(ControlToken.path(in: directory.path), &info) == 0)
        #expect(info.st_mode & 0o7777 == 0o600)
        #expect((info.st_mode & S_IFMT) == S_IFREG)
        #expect(try ControlToken.loadOrCreate(in: directory.path) == token)
        #expect(try ControlToken.read(from: directory.path) == token)
        // Two directories, two different tokens.
        let other = TempDirectory()
        defer { other.remove() }
        #expect(try ControlToken.loadOrCreate(in: other.path) != token)
    }

    @Test func refusesAFileOthersCanRead() throws {
        let directory = TempDirectory()
        defer { directory.remove() }
        let path = ControlToken.path(in: directory.path)
        let content = String(repeating: "ab", count: 32)
        #expect(FileManager.default.createFile(atPath: path, contents: Data(content.utf8)))
        #expect(chmod(path, 0o644) == 0)
        #expect(throws: ControlTokenError.insecureMode(path: path, mode: 0o644)) {
            try ControlToken.loadOrCreate(in: directory.path)
        }
        // Left alone, not overwritten.
        #expect(try String(contentsOfFile: path, encoding: .utf8) == content)
        #expect(chmod(path, 0o600) == 0)
        #expect(try ControlToken.loadOrCreate(in: directory.path) == content)
    }

    @Test func refusesStrangeThingsAtThePath() throws {
        let directory = TempDirectory()
        defer { directory.remove() }
        let path = ControlToken.path(in: directory.path)
        #expect(throws: ControlTokenError.missing(path: path)) { try ControlToken.read(from: directory.path) }

        #expect(FileManager.default.createFile(atPath: path, contents: Data("not a token".utf8)))
        #expect(chmod(path, 0o600) == 0)
        #expect(throws: ControlTokenError.invalidContent(path: path)) { try ControlToken.loadOrCreate(in: directory.path) }
        #expect(unlink(path) == 0)

        #expect(mkdir(path, 0o700) == 0)
        #expect(throws: ControlTokenError.notARegularFile(path: path)) { try ControlToken.loadOrCreate(in: directory.path) }
        #expect(rmdir(path) == 0)

        #expect(symlink("/etc/hostname", path) == 0)
        #expect(throws: ControlTokenError.notARegularFile(path: path)) { try ControlToken.loadOrCreate(in: directory.path) }
    }

    @Test func aMissingDirectoryIsAClearError() {
        #expect(throws: ControlTokenError.self) { try ControlToken.loadOrCreate(in: "/tmp/no-such-parley-dir-\(getpid())") }
    }
}
