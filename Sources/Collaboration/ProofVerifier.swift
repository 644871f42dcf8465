/// Why a proof was not accepted: the typed rejections of docs/collaboration.md, checked in this order.
public enum ProofRejection: String, Error, Sendable, Hashable, Codable, CaseIterable {
    /// Not a proof at all: bad hex, hashes that are not 32 bytes, an index outside the tree the proof climbs.
    case malformed
    /// More than ``ProofVerifier/maxInclusionHashes`` siblings.
    case proofTooLong
    /// The key is not a 65-byte uncompressed point on P-256.
    case badPublicKey
    /// The signature is not the key's over the statement the verifier expects (or is not DER).
    case badSignature
    /// The key's tree is none of the collaboration's people.
    case rootNotInCollaboration
    /// The key's tree is a person the collaboration removed.
    case revoked
    /// The nonce was never issued here (or long forgotten, or issued for another collaboration).
    case nonceUnknown
    /// The nonce's minute has passed.
    case nonceExpired
    /// The nonce was already used by a proof.
    case nonceReused

    /// What a person reads.
    public var explanation: String {
        switch self {
        case .malformed: "the proof is malformed"
        case .proofTooLong: "the proof has more than \(ProofVerifier.maxInclusionHashes) inclusion hashes"
        case .badPublicKey: "the public key is not a P-256 point"
        case .badSignature: "the signature does not match this collaboration's statement"
        case .rootNotInCollaboration: "this identity was not invited to the collaboration"
        case .revoked: "this identity's access was revoked"
        case .nonceUnknown: "the challenge is unknown"
        case .nonceExpired: "the challenge has expired"
        case .nonceReused: "the challenge was already used"
        }
    }
}

/// The stateless half of a verifier: the checks a signed proof passes against a statement and a set of roots.
/// ``NonceStore`` adds the single-use, sixty-second challenges.
public enum ProofVerifier {
    /// Longer proofs are refused before any hashing (a person has at most 32 devices: 5 hashes).
    public static let maxInclusionHashes = 16

    /// The person `signed` proves to be, among `roots` (not `revoked`), for a signature over `statement`.
    public static func check(
        _ signed: SignedIdentityProof, statement: [UInt8], roots: [PersonIdentity], revoked: [PersonIdentity] = [],
        crypto: some IdentityCrypto
    ) -> Result<PersonIdentity, ProofRejection> {
        let proof = signed.proof
        guard proof.inclusionHashes.allSatisfy({ $0.count == 32 }), !signed.signatureData.isEmpty else { return .failure(.malformed) }
        guard proof.inclusionHashes.count <= maxInclusionHashes else { return .failure(.proofTooLong) }
        // An index must name a leaf of a tree as tall as the proof: otherwise its high bits would be ignored and
        // one proof would have many indexes.
        guard proof.publicKeyIndex >= 0, proof.publicKeyIndex < 1 << proof.inclusionHashes.count else { return .failure(.malformed) }
        guard crypto.isValidPublicKey(proof.publicKey) else { return .failure(.badPublicKey) }
        guard crypto.verify(publicKey: proof.publicKey, signatureDER: signed.signatureData, message: statement) else {
            return .failure(.badSignature)
        }
        let root = MerkleTree.walk(proof, crypto: crypto)
        // Every stored root is compared, in constant time each, so timing says nothing about which one matched.
        var found: PersonIdentity?
        for candidate in roots where crypto.constantTimeEqual(candidate.rootHash, root) { found = candidate }
        if let found { return .success(found) }
        for candidate in revoked where crypto.constantTimeEqual(candidate.rootHash, root) { return .failure(.revoked) }
        return .failure(.rootNotInCollaboration)
    }
}
