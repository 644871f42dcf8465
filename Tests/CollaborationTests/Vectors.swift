import Collaboration
import Foundation
import ParleyEngine

/// The vectors Scripts/collab-vectors.py made with Python's `cryptography` (an independent implementation).
struct VectorFile: Decodable {
    struct Person: Decodable {
        struct Device: Decodable { let label: String; let privateKey: String; let publicKey: String }
        let name: String
        let devices: [Device]
        let root: String
        let proofs: [ProofCase]
    }
    struct ProofCase: Codable { let publicKey: String; let publicKeyIndex: Int; let inclusionHashes: [String] }
    struct Tree: Decodable { let count: Int; let root: String }
    struct Case: Codable {
        var name: String
        var kind: String
        var collaborationIdentifier: String?
        var group: String?
        var oldRoot: String?
        var newRoot: String?
        var nonce: String
        var expires: String
        var verifier: String
        var statement: String
        var publicKey: String
        var publicKeyIndex: Int
        var inclusionHashes: [String]
        var signatureDER: String
        var roots: [String]
        var expect: String
    }
    let persons: [Person]
    let treePublicKeys: [String]
    let trees: [Tree]
    let cases: [Case]

    static func load() throws -> VectorFile {
        guard let url = Bundle.module.url(forResource: "collab-proofs-v1", withExtension: "json", subdirectory: "Vectors") else {
            throw CocoaError(.fileNoSuchFile)
        }
        return try JSONDecoder().decode(VectorFile.self, from: Data(contentsOf: url))
    }
}

let crypto = OpenSSLIdentityCrypto()

func bytes(_ hex: String) -> [UInt8] {
    guard let value = Hex.decode(hex) else { fatalError("bad hex in a test: \(hex)") }
    return value
}

/// What this implementation says of a vector case: "valid" or the rejection's name.
func verdict(_ item: VectorFile.Case) -> String {
    let json = SignedProofJSON(
        publicKey: item.publicKey, publicKeyIndex: item.publicKeyIndex, inclusionHashes: item.inclusionHashes,
        signatureDER: item.signatureDER)
    let roots = item.roots.compactMap(PersonIdentity.init(hex:))
    guard roots.count == item.roots.count else { return ProofRejection.malformed.rawValue }
    switch json.proof {
    case .failure(let reason): return reason.rawValue
    case .success(let proof):
        switch ProofVerifier.check(proof, statement: bytes(item.statement), roots: roots, crypto: crypto) {
        case .success: return "valid"
        case .failure(let reason): return reason.rawValue
        }
    }
}
