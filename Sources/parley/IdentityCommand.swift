import Collaboration
import CommandLineSupport
import ControlProtocol
import Foundation
import ParleyEngine
import ParleyNode

/// `parley identity`: this device's collaboration identity, and offline checks of proofs.
enum IdentityCommand {
    /// The subcommands, by the word typed after `parley identity`.
    enum Action: String, CaseIterable, Sendable {
        case show, verify

        /// What `parley identity ACTION --help` prints.
        var help: String {
            switch self {
            case .show: IdentityCommand.showHelp
            case .verify: IdentityCommand.verifyHelp
            }
        }
    }

    static let help = """
        usage: parley identity show [--data-dir DIR] [--json]
               parley identity verify FILE

        This device's collaboration identity, and offline checks of signed proofs (docs/collaboration.md).

        subcommands:
          show         this device's P-256 key and its person root
          verify FILE  check a signed proof offline

        Run 'parley identity SUBCOMMAND --help' for a subcommand's options and examples.

        options:
          --data-dir DIR   (show) the data directory (default $PARLEY_DATA_DIR, else $XDG_DATA_HOME/parley, else
                           ~/.local/share/parley)
          --json           (show) the identity as JSON

        examples:
          parley identity show --data-dir /tmp/parley-b
          parley identity verify proof.json
        """

    static let showHelp = """
        usage: parley identity show [--data-dir DIR] [--json]

        Prints this device's P-256 public key, its person root (the Merkle root over the keys of the person's
        devices), how many devices the person has, and the key file. The key is made in DIR/identity/ on first use
        (mode 0600); DIR/identity/devices lists the person's other devices' keys. Needs no running parleyd.

        options:
          --data-dir DIR   the data directory (default $PARLEY_DATA_DIR, else $XDG_DATA_HOME/parley, else
                           ~/.local/share/parley)
          --json           {"publicKey", "root", "publicKeyIndex", "inclusionHashes", "devices"} as JSON

        example:
          parley identity show --data-dir /tmp/parley-b
        """

    static let verifyHelp = """
        usage: parley identity verify FILE

        Checks a signed proof offline. FILE is JSON with publicKey, publicKeyIndex, inclusionHashes, signatureDER
        (hex), either statement (hex) or collaborationIdentifier, group, nonce, expires and verifier, and roots
        (hex). Prints 'valid: ROOT' (exit 0) or the rejection and why (exit 1).

        example:
          parley identity verify proof.json
        """

    static func run(_ commandLine: [String]) throws -> ExitCode {
        guard !commandLine.isEmpty else {
            print(help)
            return .usage
        }
        var arguments = Arguments(commandLine)
        let json = arguments.flag("--json")
        let directory = try arguments.option("--data-dir")
        let positionals = try arguments.positionals()
        switch positionals.first.flatMap(Action.init(rawValue:)) {
        case .show?:
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
        case .verify?:
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
        case nil:
            throw UsageError("parley identity: unknown command \(positionals.first ?? "(none)"); see parley identity --help")
        }
    }
}
