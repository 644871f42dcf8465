import Foundation

/// A signed proof as JSON, the form the control API, `parley identity verify` and the group messages carry:
///
///     {"publicKey": "04…", "publicKeyIndex": 1, "inclusionHashes": ["…", "…"], "signatureDER": "30…"}
///
/// Byte strings are hex. Decoding checks shape only (``ProofRejection/malformed``); ``ProofVerifier`` checks the rest.
public struct SignedProofJSON: Sendable, Hashable, Codable {
    public var publicKey: String
    public var publicKeyIndex: Int
    public var inclusionHashes: [String]
    public var signatureDER: String

    public init(publicKey: String, publicKeyIndex: Int, inclusionHashes: [String], signatureDER: String) {
        self.publicKey = publicKey
        self.publicKeyIndex = publicKeyIndex
        self.inclusionHashes = inclusionHashes
        self.signatureDER = signatureDER
    }

    /// The JSON form of a proof.
    public init(_ signed: SignedIdentityProof) {
        publicKey = Hex.encode(signed.proof.publicKey)
        publicKeyIndex = signed.proof.publicKeyIndex
        inclusionHashes = signed.proof.inclusionHashes.map(Hex.encode)
        signatureDER = Hex.encode(signed.signatureData)
    }

    /// The proof, or `malformed` when a field is not hex. Lists longer than a proof can be are refused before their
    /// hashes are decoded (so a huge list costs one count).
    public var proof: Result<SignedIdentityProof, ProofRejection> {
        guard inclusionHashes.count <= ProofVerifier.maxInclusionHashes * 4 else { return .failure(.proofTooLong) }
        guard let key = Hex.decode(publicKey), let signature = Hex.decode(signatureDER) else { return .failure(.malformed) }
        var hashes: [[UInt8]] = []
        hashes.reserveCapacity(inclusionHashes.count)
        for text in inclusionHashes {
            guard let hash = Hex.decode(text) else { return .failure(.malformed) }
            hashes.append(hash)
        }
        return .success(SignedIdentityProof(
            proof: IdentityProof(publicKey: key, publicKeyIndex: publicKeyIndex, inclusionHashes: hashes), signatureData: signature))
    }

    /// The proof in `data` (JSON text), or `malformed`.
    public static func decode(_ data: Data) -> Result<SignedIdentityProof, ProofRejection> {
        guard let json = try? JSONDecoder().decode(SignedProofJSON.self, from: data) else { return .failure(.malformed) }
        return json.proof
    }
}
