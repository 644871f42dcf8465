import Collaboration
import Foundation
import ParleyEngine
import ParleyIO
import Testing

@Suite struct ProofVectorTests {
    @Test func everyVectorCaseGetsThePythonVerdict() throws {
        let file = try VectorFile.load()
        #expect(file.cases.count > 30)
        for item in file.cases {
            #expect(verdict(item) == item.expect, "case \(item.name)")
        }
    }

    @Test func statementsBuiltHereAreThePythonBytes() throws {
        for item in try VectorFile.load().cases {
            let purpose: ProofStatement.Purpose
            if item.kind == "identityUpdate" {
                guard let old = item.oldRoot.flatMap(PersonIdentity.init(hex:)), let new = item.newRoot.flatMap(PersonIdentity.init(hex:)) else {
                    Issue.record("case \(item.name) has no roots")
                    continue
                }
                purpose = .identityUpdate(old: old, new: new)
            } else {
                purpose = .collaboration(identifier: item.collaborationIdentifier ?? "", group: item.group ?? "")
            }
            let statement = ProofStatement(
                purpose: purpose, nonce: bytes(item.nonce), expires: try #require(ProofStatement.date(item.expires)), verifier: item.verifier)
            // "otherStatement" and the update-as-proof cases sign other bytes on purpose; the statement field is still ours.
            #expect(statement.map { Hex.encode($0.bytes) } == item.statement, "case \(item.name)")
        }
    }

    @Test func personRootsAndProofsMatchThePythonTrees() throws {
        let file = try VectorFile.load()
        for person in file.persons {
            let keys = person.devices.map { bytes($0.publicKey) }
            let tree = try #require(MerkleTree(publicKeys: keys, crypto: crypto))
            #expect(tree.identity.hex == person.root, "person \(person.name)")
            for expected in person.proofs {
                let proof = try #require(tree.proof(for: bytes(expected.publicKey), crypto: crypto))
                #expect(proof.publicKeyIndex == expected.publicKeyIndex)
                #expect(proof.inclusionHashes.map(Hex.encode) == expected.inclusionHashes)
            }
        }
        for tree in file.trees {
            let keys = file.treePublicKeys.prefix(tree.count).map(bytes)
            #expect(MerkleTree(publicKeys: Array(keys), crypto: crypto)?.identity.hex == tree.root, "tree of \(tree.count)")
        }
    }

    @Test func proofsMadeHereGetTheirVerdictFromThePythonChecker() throws {
        // The other way round: proofs made here (OpenSSL signing, this tree code) go through the Python checker.
        let file = try VectorFile.load()
        var cases: [VectorFile.Case] = []
        for person in file.persons.prefix(4) {
            let keys = person.devices.map { bytes($0.publicKey) }
            let tree = try #require(MerkleTree(publicKeys: keys, crypto: crypto))
            let device = DeviceKey.generate()
            let withNew = try #require(MerkleTree(publicKeys: keys + [device.publicKey], crypto: crypto))
            let proof = try #require(withNew.proof(for: device.publicKey, crypto: crypto))
            let statement = try #require(ProofStatement(
                purpose: .collaboration(identifier: "c-\(person.name)", group: "g"), nonce: crypto.randomBytes(32),
                expires: Date(timeIntervalSince1970: 1_796_119_260), verifier: "sip:owner@127.0.0.1"))
            let signature = device.sign(statement.bytes)
            let json = SignedProofJSON(SignedIdentityProof(proof: proof, signatureData: signature))
            let base = VectorFile.Case(
                name: "swift-\(person.name)", kind: "collabProof", collaborationIdentifier: "c-\(person.name)", group: "g", oldRoot: nil,
                newRoot: nil, nonce: Hex.encode(statement.nonce), expires: ProofStatement.timestamp(statement.expires),
                verifier: statement.verifier, statement: Hex.encode(statement.bytes), publicKey: json.publicKey,
                publicKeyIndex: json.publicKeyIndex, inclusionHashes: json.inclusionHashes, signatureDER: json.signatureDER,
                roots: [withNew.identity.hex], expect: "valid")
            cases.append(base)
            var oldRoot = base
            oldRoot.name += "-oldRoot"
            oldRoot.roots = [tree.identity.hex]
            oldRoot.expect = "rootNotInCollaboration"
            cases.append(oldRoot)
        }
        for item in cases { #expect(verdict(item) == item.expect, "case \(item.name)") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("collab-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("swift-cases.json")
        try JSONEncoder().encode(["cases": cases]).write(to: path)
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Scripts/collab-vectors.py")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script.standardizedFileURL.path, "check", path.path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "python check said: \(text)")
    }
}
