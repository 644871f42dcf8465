import Collaboration
import Foundation
import Glibc
import ParleyIO

/// This device's collaboration identity on disk, in `DATA_DIR/identity/` (docs/collaboration.md):
///
/// - `device-key.pem`: the device's ECDSA P-256 private key, PKCS#8 PEM, mode 0600, made on first use;
/// - `devices`: the public keys of the person's other devices (other parleyd of the same user), one 130-digit hex
///   point per line, `#` comments; with this device's key they make the person root.
public struct IdentityStore: Sendable {
    /// `DATA_DIR/identity`.
    public let directory: String

    /// The store inside a data directory.
    public init(dataDirectory: DataDirectory) {
        directory = (dataDirectory.path as NSString).appendingPathComponent("identity")
    }

    /// The key file.
    public var keyPath: String { (directory as NSString).appendingPathComponent("device-key.pem") }
    /// The other devices' file.
    public var devicesPath: String { (directory as NSString).appendingPathComponent("devices") }

    /// The device key, made (and written, 0600) when there is none yet; `created` says which.
    public func loadOrCreateKey() throws(NodeError) -> (key: DeviceKey, created: Bool) {
        if FileManager.default.fileExists(atPath: keyPath) {
            guard let text = try? String(contentsOfFile: keyPath, encoding: .utf8) else { throw NodeError("\(keyPath): cannot be read") }
            do {
                let key = try DeviceKey(pem: text)
                try tighten(keyPath)
                return (key, false)
            } catch let error as DeviceKeyError {
                throw NodeError("\(keyPath): \(error)")
            } catch {
                throw error as? NodeError ?? NodeError("\(keyPath): \(error)")
            }
        }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw NodeError("\(directory): cannot be created (\(error.localizedDescription))")
        }
        let key = DeviceKey.generate()
        let bytes = Array(key.pem.utf8)
        // Written whole to a file of its own, then linked into place: the key file never exists half written (a
        // crash leaves only a stray temporary), and link() fails when another process got there first, whose key wins.
        let temporary = keyPath + ".new-\(getpid())-\(SecureRandom.token(8))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw NodeError("\(temporary): cannot be created (\(String(cString: strerror(errno))))") }
        let written = write(fd, bytes, bytes.count) == bytes.count && fsync(fd) == 0
        let writeError = errno
        close(fd)
        defer { unlink(temporary) }
        guard written else { throw NodeError("\(temporary): cannot be written (\(String(cString: strerror(writeError))))") }
        if link(temporary, keyPath) != 0 {
            if errno == EEXIST { return (try loadOrCreateKey().key, false) }
            throw NodeError("\(keyPath): cannot be created (\(String(cString: strerror(errno))))")
        }
        let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryFD >= 0 {
            fsync(directoryFD)
            close(directoryFD)
        }
        return (key, true)
    }

    /// The other devices' public keys; a missing file is none, a bad line an error naming it.
    public func otherDevices() throws(NodeError) -> [[UInt8]] {
        guard FileManager.default.fileExists(atPath: devicesPath) else { return [] }
        guard let text = try? String(contentsOfFile: devicesPath, encoding: .utf8) else { throw NodeError("\(devicesPath): cannot be read") }
        var keys: [[UInt8]] = []
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init)?
                .trimmingCharacters(in: .whitespaces) ?? ""
            guard !line.isEmpty else { continue }
            guard let key = Hex.decode(line), P256.isValidPublicKey(key) else {
                throw NodeError("\(devicesPath):\(number + 1): not a P-256 public key (130 hex digits, 04…)")
            }
            keys.append(key)
        }
        guard keys.count < 32 else { throw NodeError("\(devicesPath): a person has at most 32 devices") }
        return keys
    }

    /// A key file others may read is made the owner's alone.
    private func tighten(_ path: String) throws(NodeError) {
        var status = stat()
        guard stat(path, &status) == 0, status.st_mode & 0o077 != 0 else { return }
        guard status.st_uid == geteuid(), chmod(path, 0o600) == 0 else {
            throw NodeError("\(path) is readable by others and cannot be made 0600: refusing to use it")
        }
    }
}
