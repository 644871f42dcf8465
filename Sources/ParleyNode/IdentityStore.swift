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
                try SecretFile.tighten(keyPath)
                return (key, false)
            } catch let error as DeviceKeyError {
                throw NodeError("\(keyPath): \(error)")
            } catch {
                throw error as? NodeError ?? NodeError("\(keyPath): \(error)")
            }
        }
        let key = DeviceKey.generate()
        guard try SecretFile.create(keyPath, text: key.pem) else { return (try loadOrCreateKey().key, false) }
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
}
