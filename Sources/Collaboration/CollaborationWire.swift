import Foundation
import GroupActivities

/// The group messages collaborations travel as (docs/collaboration.md, "Wire"): each a reliable messenger message
/// whose `type` is one of these and whose `data` is the matching payload.
///
///     member ──identity──▶ all        (signed; on joining a session, and to each member who joins later)
///     owner  ──share─────▶ all        (and to each member who joins later) · ended ──▶ all
///     member ──challengeRequest──▶ owner ──challenge──▶ member ──proof──▶ owner ──access──▶ member
///     anyone ──notice────▶ all, or the mentioned person alone
public enum CollaborationWire {
    /// A member's person root.
    public static let identity = "parley.identity"
    public static let share = "parley.collab.share"
    public static let ended = "parley.collab.ended"
    public static let challengeRequest = "parley.collab.challengeRequest"
    public static let challenge = "parley.collab.challenge"
    public static let proof = "parley.collab.proof"
    public static let access = "parley.collab.access"
    public static let notice = "parley.collab.notice"

    /// Whether a message type is one of these.
    public static func isCollaboration(_ type: String) -> Bool { type == identity || type.hasPrefix("parley.collab.") }

    /// A member's person root, signed by its device over the announcement statement.
    struct Identity: Codable {
        var root: PersonIdentity
        var proof: CompactProof
    }
    struct Share: Codable {
        var collaboration: String
        var url: String
        var metadata: CollaborationMetadata
        var verifier: String
    }
    struct Reference: Codable { var collaboration: String }
    struct Challenge: Codable {
        var collaboration: String
        var group: String
        var nonce: String
        var expires: String
        var verifier: String
    }
    /// A signed proof, compact (base64, not the control API's hex): with a 32-device tree a proof message still fits
    /// the 768 bytes a group message may have on a UDP leg.
    struct CompactProof: Codable {
        var key: String
        var index: Int
        var hashes: [String]
        var signature: String

        init(_ signed: SignedIdentityProof) {
            key = Data(signed.proof.publicKey).base64EncodedString()
            index = signed.proof.publicKeyIndex
            hashes = signed.proof.inclusionHashes.map { Data($0).base64EncodedString() }
            signature = Data(signed.signatureData).base64EncodedString()
        }

        /// The proof, or `malformed`/`proofTooLong` like the JSON form.
        var signed: Result<SignedIdentityProof, ProofRejection> {
            guard hashes.count <= ProofVerifier.maxInclusionHashes * 4 else { return .failure(.proofTooLong) }
            guard let key = Data(base64Encoded: key), let signature = Data(base64Encoded: signature) else { return .failure(.malformed) }
            var decoded: [[UInt8]] = []
            for hash in hashes {
                guard let bytes = Data(base64Encoded: hash) else { return .failure(.malformed) }
                decoded.append(Array(bytes))
            }
            return .success(SignedIdentityProof(
                proof: IdentityProof(publicKey: Array(key), publicKeyIndex: index, inclusionHashes: decoded), signatureData: Array(signature)))
        }
    }
    struct Proof: Codable {
        var collaboration: String
        var nonce: String
        var proof: CompactProof
    }
    struct Access: Codable {
        var collaboration: String
        var granted: Bool
        var reason: ProofRejection?
        var root: PersonIdentity?
    }
    struct Notice: Codable {
        var collaboration: String
        var kind: String
        var trigger: String
    }

    static func encode(_ value: some Encodable) -> JSONValue {
        // Every payload here is plain Codable data: encoding cannot fail.
        guard let data = try? JSONEncoder().encode(value), let json = try? JSONDecoder().decode(JSONValue.self, from: data) else {
            preconditionFailure("collaboration payload does not encode")
        }
        return json
    }

    static func decode<Value: Decodable>(_ type: Value.Type, _ json: JSONValue) -> Value? {
        try? JSONDecoder().decode(type, from: json.encoded)
    }
}
