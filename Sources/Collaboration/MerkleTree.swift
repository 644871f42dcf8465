/// A person's tree over their devices' public keys, format v1 (docs/collaboration.md):
///
///               root = H(n01 ‖ n22)
///              /                   \
///       n01 = H(l0 ‖ l1)      n22 = H(l2 ‖ l2)     ← an odd level pairs its last node with itself
///        /        \              /
///      l0          l1          l2                  ← leaf = H(publicKey), sorted ascending, no duplicates
///
/// Every node on every path has a sibling, so a proof is one hash per level and Apple's walk (index parity picks
/// the side, the index halves each level) rebuilds the root.
public struct MerkleTree: Sendable {
    /// The leaves, sorted ascending and deduplicated.
    public let leaves: [[UInt8]]
    /// Every level, leaves first, root last.
    private let levels: [[[UInt8]]]
    /// The public keys by leaf.
    private let keysByLeaf: [[UInt8]: [UInt8]]

    /// The tree over `publicKeys` (in any order; repeats count once). Empty sets have no tree.
    public init?(publicKeys: [[UInt8]], crypto: some IdentityCrypto) {
        guard !publicKeys.isEmpty else { return nil }
        var byLeaf: [[UInt8]: [UInt8]] = [:]
        for key in publicKeys { byLeaf[crypto.sha256(key)] = key }
        let leaves = byLeaf.keys.sorted { $0.lexicographicallyPrecedes($1) }
        var levels = [leaves]
        while let level = levels.last, level.count > 1 {
            var next: [[UInt8]] = []
            next.reserveCapacity((level.count + 1) / 2)
            var index = 0
            while index < level.count {
                let left = level[index]
                let right = index + 1 < level.count ? level[index + 1] : left
                next.append(crypto.sha256(left + right))
                index += 2
            }
            levels.append(next)
        }
        self.leaves = leaves
        self.levels = levels
        keysByLeaf = byLeaf
    }

    /// The person this tree names.
    public var identity: PersonIdentity {
        // A level of one node is the root; the loop above always ends on one.
        guard let root = PersonIdentity(rootHash: levels[levels.count - 1][0]) else { preconditionFailure("root is not 32 bytes") }
        return root
    }

    /// The proof for `publicKey`, or nil when it is not one of the tree's keys.
    public func proof(for publicKey: [UInt8], crypto: some IdentityCrypto) -> IdentityProof? {
        let leaf = crypto.sha256(publicKey)
        guard keysByLeaf[leaf] != nil, var index = leaves.firstIndex(of: leaf) else { return nil }
        let leafIndex = index
        var hashes: [[UInt8]] = []
        for level in levels.dropLast() {
            let sibling = index.isMultiple(of: 2) ? min(index + 1, level.count - 1) : index - 1
            hashes.append(level[sibling])
            index /= 2
        }
        return IdentityProof(publicKey: publicKey, publicKeyIndex: leafIndex, inclusionHashes: hashes)
    }

    /// The root a proof leads to, by Apple's walk (WWDC22 10093): even index → H(current ‖ sibling), odd →
    /// H(sibling ‖ current), the index halving each level.
    public static func walk(_ proof: IdentityProof, crypto: some IdentityCrypto) -> [UInt8] {
        var current = crypto.sha256(proof.publicKey)
        var index = proof.publicKeyIndex
        for sibling in proof.inclusionHashes {
            current = index.isMultiple(of: 2) ? crypto.sha256(current + sibling) : crypto.sha256(sibling + current)
            index /= 2
        }
        return current
    }
}
