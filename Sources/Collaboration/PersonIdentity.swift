/// A person, as a collaboration knows them: the Merkle root over all of their devices' public keys (Apple's
/// `SWPerson.Identity`). Equal roots are the same person with the same devices.
public struct PersonIdentity: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The 32-byte root hash.
    public let rootHash: [UInt8]

    /// The identity with this root; nil unless it is 32 bytes.
    public init?(rootHash: [UInt8]) {
        guard rootHash.count == 32 else { return nil }
        self.rootHash = rootHash
    }

    /// The identity whose root is this hex; nil unless it is 64 hex digits.
    public init?(hex: String) {
        guard let bytes = Hex.decode(hex) else { return nil }
        self.init(rootHash: bytes)
    }

    /// The root as lowercase hex.
    public var hex: String { Hex.encode(rootHash) }
    public var description: String { hex }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let identity = PersonIdentity(hex: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a 32-byte hex root"))
        }
        self = identity
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(hex)
    }
}

/// A proof that one device's key is a leaf of a person's tree (Apple's `SWPerson.IdentityProof`).
public struct IdentityProof: Sendable, Hashable {
    /// The device's 65-byte uncompressed P-256 public key.
    public var publicKey: [UInt8]
    /// The leaf's index among the person's sorted leaves: its parity at each level says left or right.
    public var publicKeyIndex: Int
    /// The sibling at each level, bottom up.
    public var inclusionHashes: [[UInt8]]

    public init(publicKey: [UInt8], publicKeyIndex: Int, inclusionHashes: [[UInt8]]) {
        self.publicKey = publicKey
        self.publicKeyIndex = publicKeyIndex
        self.inclusionHashes = inclusionHashes
    }
}

/// A proof of inclusion with the device's signature over a statement (Apple's `SWPerson.SignedIdentityProof`).
public struct SignedIdentityProof: Sendable, Hashable {
    /// Which device, and where in its person's tree.
    public var proof: IdentityProof
    /// ECDSA/SHA-256 over the statement, DER.
    public var signatureData: [UInt8]

    public init(proof: IdentityProof, signatureData: [UInt8]) {
        self.proof = proof
        self.signatureData = signatureData
    }
}
