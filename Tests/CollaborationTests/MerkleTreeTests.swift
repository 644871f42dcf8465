import Collaboration
import Foundation
import ParleyIO
import Testing

@Suite struct MerkleTreeTests {
    let keys = (0..<64).map { _ in DeviceKey.generate().publicKey }

    @Test func everyLeafsWalkReachesTheRootForEveryCountUpTo64() throws {
        for count in 1...64 {
            let tree = try #require(MerkleTree(publicKeys: Array(keys.prefix(count)), crypto: crypto))
            let expectedLength = Int(log2(Double(count)).rounded(.up))
            for key in keys.prefix(count) {
                let proof = try #require(tree.proof(for: key, crypto: crypto))
                #expect(proof.inclusionHashes.count == expectedLength, "count \(count)")
                #expect(MerkleTree.walk(proof, crypto: crypto) == tree.identity.rootHash, "count \(count)")
            }
        }
    }

    @Test func permutationsAndDuplicatesGiveTheSameRoot() throws {
        var generator = SystemRandomNumberGenerator()
        for count in [1, 2, 3, 5, 8, 13, 33] {
            let set = Array(keys.prefix(count))
            let root = MerkleTree(publicKeys: set, crypto: crypto)?.identity
            for _ in 0..<5 {
                let shuffled = (set + set.prefix(count / 2 + 1)).shuffled(using: &generator)
                #expect(MerkleTree(publicKeys: shuffled, crypto: crypto)?.identity == root, "count \(count)")
            }
        }
        #expect(MerkleTree(publicKeys: [], crypto: crypto) == nil)
    }

    @Test func tamperedProofsMissTheRoot() throws {
        let tree = try #require(MerkleTree(publicKeys: Array(keys.prefix(5)), crypto: crypto))
        // A node paired with itself reads the same from either side; every other leaf's parity matters.
        let paired = try keys.prefix(5).map { try #require(tree.proof(for: $0, crypto: crypto)) }
        let proof = try #require(paired.first { $0.inclusionHashes[0] != crypto.sha256($0.publicKey) })
        for candidate in paired where candidate.inclusionHashes[0] != crypto.sha256(candidate.publicKey) {
            var flipped = candidate
            flipped.publicKeyIndex ^= 1
            #expect(MerkleTree.walk(flipped, crypto: crypto) != tree.identity.rootHash)
        }
        for level in proof.inclusionHashes.indices {
            var tampered = proof
            tampered.inclusionHashes[level][0] ^= 0x01
            #expect(MerkleTree.walk(tampered, crypto: crypto) != tree.identity.rootHash)
        }
        #expect(tree.proof(for: keys[9], crypto: crypto) == nil)
    }

    @Test func randomProofsNeverVerifyAgainstARootTheyWereNotBuiltFrom() throws {
        let key = DeviceKey.generate()
        let statement = Array("statement".utf8)
        let signature = key.sign(statement)
        let roots = try (0..<4).map { index in try #require(MerkleTree(publicKeys: Array(keys[(index * 8)..<(index * 8 + 8)]), crypto: crypto)).identity }
        for length in 0...6 {
            for _ in 0..<20 {
                let proof = IdentityProof(
                    publicKey: key.publicKey, publicKeyIndex: Int.random(in: 0..<(1 << length)),
                    inclusionHashes: (0..<length).map { _ in crypto.randomBytes(32) })
                let result = ProofVerifier.check(
                    SignedIdentityProof(proof: proof, signatureData: signature), statement: statement, roots: roots, crypto: crypto)
                #expect(result == .failure(.rootNotInCollaboration))
            }
        }
    }

    @Test func verifierRejectionsAreTyped() throws {
        let device = DeviceKey.generate()
        let tree = try #require(MerkleTree(publicKeys: [device.publicKey] + keys.prefix(4), crypto: crypto))
        let proof = try #require(tree.proof(for: device.publicKey, crypto: crypto))
        let statement = Array("s".utf8)
        let good = SignedIdentityProof(proof: proof, signatureData: device.sign(statement))
        let roots = [tree.identity]
        func check(_ signed: SignedIdentityProof, roots: [PersonIdentity] = roots, revoked: [PersonIdentity] = []) -> Result<PersonIdentity, ProofRejection> {
            ProofVerifier.check(signed, statement: statement, roots: roots, revoked: revoked, crypto: crypto)
        }
        #expect(check(good) == .success(tree.identity))
        #expect(check(good, roots: [], revoked: roots) == .failure(.revoked))
        var truncated = good
        truncated.proof.publicKey.removeLast()
        #expect(check(truncated) == .failure(.badPublicKey))
        var offCurve = good
        offCurve.proof.publicKey[64] ^= 0x01
        #expect(check(offCurve) == .failure(.badPublicKey))
        var badDER = good
        badDER.signatureData = Array(repeating: 0x30, count: 70)
        #expect(check(badDER) == .failure(.badSignature))
        #expect(ProofVerifier.check(good, statement: Array("t".utf8), roots: roots, crypto: crypto) == .failure(.badSignature))
        var tooLong = good
        tooLong.proof.inclusionHashes = Array(repeating: Array(repeating: 0, count: 32), count: 17)
        #expect(check(tooLong) == .failure(.proofTooLong))
        var shortHash = good
        shortHash.proof.inclusionHashes[0].removeLast()
        #expect(check(shortHash) == .failure(.malformed))
        var highIndex = good
        highIndex.proof.publicKeyIndex += 1 << proof.inclusionHashes.count
        #expect(check(highIndex) == .failure(.malformed))
        var negative = good
        negative.proof.publicKeyIndex = -1
        #expect(check(negative) == .failure(.malformed))
    }

    @Test func proofJSONRefusesWhatIsNotAProof() {
        let inputs = [
            "", "{}", "[]", "null", #"{"publicKey":"zz","publicKeyIndex":0,"inclusionHashes":[],"signatureDER":"30"}"#,
            #"{"publicKey":"04","publicKeyIndex":"0","inclusionHashes":[],"signatureDER":"30"}"#,
            #"{"publicKey":"04","publicKeyIndex":0,"inclusionHashes":["0g"],"signatureDER":"30"}"#,
            #"{"publicKey":"04","publicKeyIndex":0,"inclusionHashes":[1],"signatureDER":"30"}"#,
        ]
        for input in inputs { #expect(SignedProofJSON.decode(Data(input.utf8)) == .failure(.malformed), "input \(input)") }
        let huge = "{\"publicKey\":\"04\",\"publicKeyIndex\":0,\"signatureDER\":\"30\",\"inclusionHashes\":["
            + Array(repeating: "\"00\"", count: 100_000).joined(separator: ",") + "]}"
        #expect(SignedProofJSON.decode(Data(huge.utf8)) == .failure(.proofTooLong))
    }
}
