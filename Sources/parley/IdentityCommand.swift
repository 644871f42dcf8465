import Collaboration
import CommandLineSupport
import ControlProtocol
import Foundation
import ParleyEngine
import ParleyNode

/// `parley identity`: this device's collaboration identity, and offline checks of proofs.
enum IdentityCommand {
    static let help = """
        usage: parley identity show [--data-dir DIR] [--json]
               parley identity verify FILE

          show         this device's P-256 key and its person root (made in DIR/identity/ on first use, mode 0600;
                       DIR/identity/devices lists the person's other devices' keys)
          verify FILE  check a signed proof offline: FILE is JSON with publicKey, publicKeyIndex, inclusionHashes,
                       signatureDER (hex), either statement (hex) or collaborationIdentifier, group, nonce, expires and
                       verifier, and roots (hex); prints `valid: ROOT` (exit 0) or the rejection (exit 1)

        The format: docs/collaboration.md.
        """

    static func run(_ commandLine: [String]) throws -> ExitCode {
        var arguments = Arguments(commandLine)
        if let answer = helpAnswer(commandLine, &arguments, help: help) { return answer }
        let json = arguments.flag("--json")
        let directory = try arguments.option("--data-dir")
        let positionals = try arguments.positionals()
        switch positionals.first {
        case "show":
            guard positionals.count == 1 else { throw UsageError("parley identity show takes no arguments") }
            let store = IdentityStore(dataDirectory: DataDirectory.resolve(directory))
            let (key, created) = try store.loadOrCreateKey()
            let identity = LocalIdentity(publicKey: key.publicKey, otherDevices: try store.otherDevices(), crypto: OpenSSLIdentityCrypto())
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                print(String(decoding: try encoder.encode(IdentityResult(identity)), as: UTF8.self))
            } else {
                print("""
                    public key  \(Hex.encode(key.publicKey))
                    root        \(identity.person.hex)
                    devices     \(identity.devices.count) (index \(identity.proof.publicKeyIndex) of this one)
                    key file    \(store.keyPath)\(created ? " (made now)" : "")
                    """)
            }
            return .ok
        case "verify":
            guard positionals.count == 2 else { throw UsageError("parley identity verify takes one FILE") }
            guard let data = FileManager.default.contents(atPath: positionals[1]) else {
                throw UsageError("parley identity verify: cannot read \(positionals[1])")
            }
            switch ProofFile.check(data, crypto: OpenSSLIdentityCrypto()) {
            case .success(let root):
                print("valid: \(root.hex)")
                return .ok
            case .failure(let reason):
                print("\(reason.rawValue): \(reason.explanation)")
                return .failure
            }
        default:
            throw UsageError("parley identity: unknown command \(positionals.first ?? "(none)"); see parley identity --help")
        }
    }
}
