import Foundation

/// A proof to check offline (`parley identity verify FILE`): the signed proof, the statement — as bytes, or as its
/// fields — and the roots it may belong to. No nonce bookkeeping: that is the verifier's, online.
///
///     {"publicKey": "04…", "publicKeyIndex": 1, "inclusionHashes": ["…"], "signatureDER": "30…",
///      "statement": "70…"  |  "collaborationIdentifier": "…", "group": "…", "nonce": "…", "expires": "…", "verifier": "…",
///      "roots": ["…", …]}
public struct ProofFile: Sendable, Codable {
    public var publicKey: String
    public var publicKeyIndex: Int
    public var inclusionHashes: [String]
    public var signatureDER: String
    public var statement: String?
    public var collaborationIdentifier: String?
    public var group: String?
    public var nonce: String?
    public var expires: String?
    public var verifier: String?
    public var roots: [String]

    /// The file's verdict: the person the proof shows, or why not.
    public func check(crypto: some IdentityCrypto) -> Result<PersonIdentity, ProofRejection> {
        let json = SignedProofJSON(publicKey: publicKey, publicKeyIndex: publicKeyIndex, inclusionHashes: inclusionHashes, signatureDER: signatureDER)
        let signed: SignedIdentityProof
        switch json.proof {
        case .success(let proof): signed = proof
        case .failure(let reason): return .failure(reason)
        }
        var people: [PersonIdentity] = []
        for root in roots {
            guard let person = PersonIdentity(hex: root) else { return .failure(.malformed) }
            people.append(person)
        }
        guard let bytes = statementBytes else { return .failure(.malformed) }
        return ProofVerifier.check(signed, statement: bytes, roots: people, crypto: crypto)
    }

    /// The signed bytes: given, or built from the fields.
    public var statementBytes: [UInt8]? {
        if let statement { return Hex.decode(statement) }
        guard let collaborationIdentifier, let group, let nonce, let expires, let verifier else { return nil }
        return CollaborationChallenge(collaboration: collaborationIdentifier, group: group, nonce: nonce, expires: expires, verifier: verifier)
            .statement?.bytes
    }

    /// The file's verdict from its JSON text; text that is not such an object is `malformed`.
    public static func check(_ data: Data, crypto: some IdentityCrypto) -> Result<PersonIdentity, ProofRejection> {
        guard let file = try? JSONDecoder().decode(ProofFile.self, from: data) else { return .failure(.malformed) }
        return file.check(crypto: crypto)
    }
}
