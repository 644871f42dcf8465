import Collaboration
import ControlProtocol
import Foundation
import ParleyEngine
import ParleyIO
import ParleyTestSupport
import Testing

/// Collaborations between real parleyd on loopback (docs/collaboration.md): alice owns one in a merged call with
/// bob and carol; proofs travel over the group messenger; membership changes revoke; notices reach whom they should.
@Suite("Collaborations: three parleyd, proofs over the group messenger", .serialized)
struct CollaborationInteropTests {
    static func collaboration(_ event: [String: Any]) -> [String: Any] { event["collaboration"] as? [String: Any] ?? [:] }

    static func challenge(_ result: [String: Any]) throws -> CollaborationChallenge {
        try JSONDecoder().decode(CollaborationChallenge.self, from: JSONSerialization.data(withJSONObject: result))
    }

    static func proof(_ result: [String: Any]) throws -> SignedProofJSON {
        try JSONDecoder().decode(SignedProofJSON.self, from: JSONSerialization.data(withJSONObject: result))
    }

    @Test("grant by proof, revoke on unmerge, replay → nonceReused, another group's proof → badSignature, notices and mentions")
    func grantRevokeReplayNotices() throws {
        let alice = try Parleyd(["--user", "alice", "--display-name", "Alice", "--media", "off"])
        let bob = try Parleyd(["--user", "bob", "--display-name", "Bob", "--media", "off", "--auto-answer", "0"])
        let carol = try Parleyd(["--user", "carol", "--display-name", "Carol", "--media", "off", "--auto-answer", "0"])
        let owner = try GroupControl(alice), toBob = try GroupControl(bob), toCarol = try GroupControl(carol)
        let bobRoot = try #require(try toBob.result(.identity)["root"] as? String)
        let carolRoot = try #require(try toCarol.result(.identity)["root"] as? String)
        // The key is kept in the data directory, the owner's alone.
        let keyFile = bob.dataDirectory.appendingPathComponent("identity/device-key.pem").path
        let mode = try FileManager.default.attributesOfItem(atPath: keyFile)[.posixPermissions] as? Int
        #expect(mode == 0o600)

        let bobsCall = try owner.call("sip:bob@127.0.0.1:\(bob.port)")
        let carolsCall = try owner.call("sip:carol@127.0.0.1:\(carol.port)")
        try owner.waitForJoined([bobsCall, carolsCall])
        _ = try owner.result(.merge(MergeParams(conversation: bobsCall, with: carolsCall)))
        let started = try owner.result(.collaborationStart(CollaborationStartParams(conversation: bobsCall, title: "Trip plan")))
        let id = try #require(started["collaboration"] as? String)
        let group = try #require(started["session"] as? String)

        // Both members are told, without the initiator's handle, and both roots are stored (invited).
        for member in [toBob, toCarol] {
            let shared = try member.nextEvent("collaborationChanged") { Self.collaboration($0)["collaboration"] as? String == id }
            let data = Self.collaboration(shared)
            #expect(data["isOwner"] as? Bool == false && data["title"] as? String == "Trip plan")
            #expect((data["metadata"] as? [String: Any])?["initiatorHandle"] is NSNull, "written as null, never the handle")
        }
        func access(of root: String) throws -> String? {
            let list = try owner.result(.collaborations)["collaborations"] as? [[String: Any]] ?? []
            let people = list.first { $0["collaboration"] as? String == id }?["participants"] as? [[String: Any]] ?? []
            return people.first { $0["root"] as? String == root }?["access"] as? String
        }
        let deadline = Date().addingTimeInterval(10)
        while try access(of: bobRoot) != "invited" || access(of: carolRoot) != "invited" {
            guard Date() < deadline else { throw InteropError("roots not stored: \(try owner.result(.collaborations))") }
            usleep(50_000)
        }
        // Each addition is announced to the owner's frontends, though none waits for confirmation.
        var announced = Set<String>()
        while announced != [bobRoot, carolRoot] {
            let update = try owner.nextEvent("collaborationParticipantsUpdate") { $0["collaboration"] as? String == id }
            #expect(update["requiresConfirmation"] as? Bool == false && update["removed"] as? [String] == [])
            #expect(ControlTime.date(update["deadline"] as? String ?? "") != nil, "deadline is a timestamp: \(update)")
            announced.formUnion(update["added"] as? [String] ?? [])
        }

        // Opening it: each member's device proves itself over the messenger and is granted.
        for member in [toBob, toCarol] {
            _ = try member.result(.collaborationOpen(CollaborationParams(collaboration: id)))
            _ = try member.nextEvent("collaborationChanged") {
                Self.collaboration($0)["collaboration"] as? String == id && Self.collaboration($0)["access"] as? String == "granted"
            }
        }
        #expect(try access(of: bobRoot) == "granted" && access(of: carolRoot) == "granted")
        let granted = try owner.nextEvent("collaborationVerified") { $0["granted"] as? Bool == true }
        #expect(granted["participant"] is String)

        // Notices: an edit reaches both; a mention of bob reaches bob alone (carol's next notice is the rename).
        _ = try owner.result(.collaborationNotice(CollaborationNoticeParams(collaboration: id, kind: "change", trigger: "edit")))
        _ = try owner.result(.collaborationNotice(CollaborationNoticeParams(collaboration: id, kind: "mention", person: bobRoot)))
        _ = try owner.result(.collaborationNotice(CollaborationNoticeParams(collaboration: id, kind: "persistence", trigger: "renamed")))
        let skipMembership: ([String: Any]) -> Bool = { $0["kind"] as? String != "membership" }
        for (member, expected) in [(toBob, ["edit", bobRoot, "renamed"]), (toCarol, ["edit", "renamed"])] {
            var triggers: [String] = []
            for _ in expected { triggers.append(try member.nextEvent("collaborationNotice", skipMembership)["trigger"] as? String ?? "") }
            #expect(triggers == expected)
        }
        let mention = try owner.error(.collaborationNotice(CollaborationNoticeParams(collaboration: id, kind: "mention", person: String(repeating: "0", count: 64))))
        #expect(mention.code == "unknownParticipant")

        // A proof is good once: replayed, its nonce is spent.
        let challenge = try Self.challenge(try owner.result(.collaborationChallenge(CollaborationParams(collaboration: id))))
        #expect(challenge.group == group)
        let bobsProof = try Self.proof(try toBob.result(.collaborationProve(challenge)))
        let first = try owner.result(.collaborationVerify(CollaborationVerifyParams(collaboration: id, nonce: challenge.nonce, proof: bobsProof)))
        #expect(first["root"] as? String == bobRoot)
        let replay = try owner.error(.collaborationVerify(CollaborationVerifyParams(collaboration: id, nonce: challenge.nonce, proof: bobsProof)))
        #expect(replay.code == "proofRejected" && replay.details["reason"] as? String == "nonceReused", "\(replay)")

        // Carol is unmerged: her root is revoked and a fresh proof from her device is refused as such.
        _ = try owner.result(.unmerge(ConversationParams(conversation: carolsCall)))
        let removedDeadline = Date().addingTimeInterval(10)
        while try access(of: carolRoot) != "revoked" {
            guard Date() < removedDeadline else { throw InteropError("carol not revoked: \(try owner.result(.collaborations))") }
            usleep(50_000)
        }
        _ = try toBob.nextEvent("collaborationNotice") { $0["trigger"] as? String == "removedCollaborator" }
        let again = try Self.challenge(try owner.result(.collaborationChallenge(CollaborationParams(collaboration: id))))
        let carolsProof = try Self.proof(try toCarol.result(.collaborationProve(again)))
        let revoked = try owner.error(.collaborationVerify(CollaborationVerifyParams(collaboration: id, nonce: again.nonce, proof: carolsProof)))
        #expect(revoked.details["reason"] as? String == "revoked", "\(revoked)")

        // A second collaboration on carol's own call (another group): bob's proof for the first, offered with a
        // challenge of the second, signs the wrong statement.
        let second = try owner.result(.collaborationStart(CollaborationStartParams(conversation: carolsCall, title: "Budget")))
        let secondID = try #require(second["collaboration"] as? String)
        #expect(second["session"] as? String != group)
        let other = try Self.challenge(try owner.result(.collaborationChallenge(CollaborationParams(collaboration: secondID))))
        let crossGroup = try owner.error(.collaborationVerify(CollaborationVerifyParams(collaboration: secondID, nonce: other.nonce, proof: bobsProof)))
        #expect(crossGroup.details["reason"] as? String == "badSignature", "\(crossGroup)")
    }

    @Test("a new device: refused until an old device vouches for the new root, then granted; the vouching is single use")
    func newDevice() throws {
        let alice = try Parleyd(["--user", "alice", "--display-name", "Alice", "--media", "off"])
        let bob = try Parleyd(["--user", "bob", "--display-name", "Bob", "--media", "off", "--auto-answer", "0"])
        let owner = try GroupControl(alice), toBob = try GroupControl(bob)
        let bobRoot = try #require(try toBob.result(.identity)["root"] as? String)
        let bobKey = try #require(try toBob.result(.identity)["publicKey"] as? String)
        let call = try owner.call("sip:bob@127.0.0.1:\(bob.port)")
        try owner.waitForJoined([call])
        let id = try #require(try owner.result(.collaborationStart(CollaborationStartParams(conversation: call, title: "Plan")))["collaboration"] as? String)
        _ = try toBob.nextEvent("collaborationChanged") { Self.collaboration($0)["collaboration"] as? String == id }
        _ = try owner.nextEvent("collaborationChanged") { (Self.collaboration($0)["participants"] as? [Any])?.count == 1 }

        // Bob's laptop: a key of its own, in a tree with bob's phone.
        let laptop = DeviceKey.generate()
        let crypto = OpenSSLIdentityCrypto()
        let phoneKey = try #require(Hex.decode(bobKey))
        let newTree = try #require(MerkleTree(publicKeys: [laptop.publicKey, phoneKey], crypto: crypto))
        func laptopProof(_ challenge: CollaborationChallenge) throws -> SignedProofJSON {
            let statement = try #require(challenge.statement)
            let proof = try #require(newTree.proof(for: laptop.publicKey, crypto: crypto))
            return SignedProofJSON(SignedIdentityProof(proof: proof, signatureData: laptop.sign(statement.bytes)))
        }
        func challenge() throws -> CollaborationChallenge {
            try Self.challenge(try owner.result(.collaborationChallenge(CollaborationParams(collaboration: id))))
        }
        var fresh = try challenge()
        let before = try owner.error(.collaborationVerify(CollaborationVerifyParams(collaboration: id, nonce: fresh.nonce, proof: try laptopProof(fresh))))
        #expect(before.details["reason"] as? String == "rootNotInCollaboration", "\(before)")

        // The phone vouches: old root (the phone alone) → new root (phone and laptop).
        fresh = try challenge()
        let update = try toBob.result(.identityUpdateProve(IdentityUpdateProveParams(
            challenge: fresh, oldDevices: [], newDevices: [Hex.encode(laptop.publicKey)])))
        #expect(update["oldRoot"] as? String == bobRoot && update["newRoot"] as? String == newTree.identity.hex)
        let proof = try Self.proof(try #require(update["proof"] as? [String: Any]))
        let replace = CollaborationReplaceIdentityParams(
            collaboration: id, nonce: fresh.nonce, oldRoot: bobRoot, newRoot: newTree.identity.hex, proof: proof)
        #expect(try owner.result(.collaborationReplaceIdentity(replace))["root"] as? String == newTree.identity.hex)
        let again = try owner.error(.collaborationReplaceIdentity(replace))
        #expect(again.details["reason"] as? String == "nonceReused", "\(again)")

        fresh = try challenge()
        let after = try owner.result(.collaborationVerify(CollaborationVerifyParams(collaboration: id, nonce: fresh.nonce, proof: try laptopProof(fresh))))
        #expect(after["root"] as? String == newTree.identity.hex)
        // The laptop cannot vouch for a device set of its own making.
        fresh = try challenge()
        let selfMade = try #require(MerkleTree(publicKeys: [laptop.publicKey, DeviceKey.generate().publicKey], crypto: crypto))
        let nonce = try #require(Hex.decode(fresh.nonce)), expires = try #require(ProofStatement.date(fresh.expires))
        let statement = try #require(ProofStatement(
            purpose: .identityUpdate(old: newTree.identity, new: selfMade.identity), nonce: nonce, expires: expires, verifier: fresh.verifier))
        let forged = SignedProofJSON(SignedIdentityProof(
            proof: try #require(selfMade.proof(for: laptop.publicKey, crypto: crypto)), signatureData: laptop.sign(statement.bytes)))
        let hijack = try owner.error(.collaborationReplaceIdentity(CollaborationReplaceIdentityParams(
            collaboration: id, nonce: fresh.nonce, oldRoot: newTree.identity.hex, newRoot: selfMade.identity.hex, proof: forged)))
        #expect(hijack.details["reason"] as? String == "rootNotInCollaboration", "\(hijack)")
    }

    @Test("bad input: malformed proofs, huge lists, invalid DER, keys off the curve, wrong owner — clear rejections, parleyd lives")
    func badProofs() throws {
        let alice = try Parleyd(["--user", "alice", "--media", "off"])
        let bob = try Parleyd(["--user", "bob", "--media", "off", "--auto-answer", "0"])
        // A callee that never answers: its call rings, and a collaboration cannot start on it.
        let ringer = try Parleyd(["--user", "ringer", "--media", "off"])
        let owner = try GroupControl(alice), member = try GroupControl(bob)
        let ringing = try owner.call("sip:ringer@127.0.0.1:\(ringer.port)")
        let early = try owner.error(.collaborationStart(CollaborationStartParams(conversation: ringing, title: "Early")))
        #expect(early.code == "notJoined", "\(early)")
        _ = try owner.result(.end(ConversationParams(conversation: ringing)))
        let call = try owner.call("sip:bob@127.0.0.1:\(bob.port)")
        try owner.waitForJoined([call])
        let picker = CollaborationShareOptions(optionsGroups: [CollaborationOptionsGroup(identifier: "p", isPicker: true, options: [
            CollaborationOption(title: "A", identifier: "a", isSelected: true), CollaborationOption(title: "B", identifier: "b", isSelected: true),
        ])])
        let twoPicked = try owner.error(.collaborationStart(CollaborationStartParams(conversation: call, title: "X", userSelectedShareOptions: picker)))
        #expect(twoPicked.code == "invalidParams", "\(twoPicked)")
        let id = try #require(try owner.result(.collaborationStart(CollaborationStartParams(conversation: call, title: "Doc")))["collaboration"] as? String)
        _ = try member.nextEvent("collaborationChanged") { Self.collaboration($0)["collaboration"] as? String == id }
        let challenge = try Self.challenge(try owner.result(.collaborationChallenge(CollaborationParams(collaboration: id))))
        let good = try Self.proof(try member.result(.collaborationProve(challenge)))
        var cases: [(SignedProofJSON, String)] = []
        var bad = good
        bad.publicKey = String(good.publicKey.dropLast(2))
        cases.append((bad, "badPublicKey"))
        bad = good
        bad.publicKey = String(good.publicKey.dropLast(2)) + (good.publicKey.hasSuffix("00") ? "01" : "00")
        cases.append((bad, "badPublicKey"))
        bad = good
        bad.signatureDER = "3006020101020101"
        cases.append((bad, "badSignature"))
        bad = good
        bad.inclusionHashes = Array(repeating: String(repeating: "ab", count: 32), count: 17)
        cases.append((bad, "proofTooLong"))
        bad = good
        bad.inclusionHashes = Array(repeating: "00", count: 10_000)
        cases.append((bad, "proofTooLong"))
        bad = good
        bad.signatureDER = "zz"
        cases.append((bad, "malformed"))
        for (proof, reason) in cases {
            let fresh = try Self.challenge(try owner.result(.collaborationChallenge(CollaborationParams(collaboration: id))))
            let refused = try owner.error(.collaborationVerify(CollaborationVerifyParams(collaboration: id, nonce: fresh.nonce, proof: proof)))
            #expect(refused.code == "proofRejected" && refused.details["reason"] as? String == reason, "\(reason): \(refused)")
        }
        let unknownNonce = try owner.error(.collaborationVerify(CollaborationVerifyParams(collaboration: id, nonce: String(repeating: "1", count: 64), proof: good)))
        #expect(unknownNonce.details["reason"] as? String == "nonceUnknown")
        #expect(try member.error(.collaborationChallenge(CollaborationParams(collaboration: id))).code == "refused")
        #expect(try owner.error(.collaborationChallenge(CollaborationParams(collaboration: "nope"))).code == "notFound")
        #expect(try owner.error(.collaborationConfirm(CollaborationConfirmParams(action: "action-999", accept: true))).code == "notFound")
        // Members cannot end what they do not own; the owner can, and the member hears so.
        #expect(try member.error(.collaborationEnd(CollaborationParams(collaboration: id))).code == "refused")
        _ = try owner.result(.collaborationEnd(CollaborationParams(collaboration: id)))
        _ = try member.nextEvent("collaborationChanged") { Self.collaboration($0)["state"] as? String == "ended" }
        #expect(try owner.result(.status)["daemon"] != nil)
    }

    @Test("parley identity show, verify FILE, and parley collab start, list, notice, watch")
    func cli() throws {
        let alice = try Parleyd(["--user", "alice", "--display-name", "Alice", "--media", "off"])
        let bob = try Parleyd(["--user", "bob", "--display-name", "Bob", "--media", "off", "--auto-answer", "0"])
        let a = ["--data-dir", alice.dataDirectory.path], b = ["--data-dir", bob.dataDirectory.path]
        let show = try ControlCLITests.parley(["identity", "show", "--json"] + b)
        let identity = try #require(try JSONSerialization.jsonObject(with: Data(show.output.utf8)) as? [String: Any], "\(show.output)")
        // The CLI reads the same key the running parleyd uses.
        #expect(identity["root"] as? String == (try GroupControl(bob).result(.identity)["root"] as? String))
        let watch = try RunningProcess(try Interop.binary("parley"), ["collab", "watch"] + b, name: "parley collab watch")
        defer { watch.process.terminate() }
        try watch.waitForLine("the watch banner") { $0.contains("watching parleyd") }
        let call = try ControlCLITests.parley(["call", "sip:bob@127.0.0.1:\(bob.port)"] + a)
        #expect(call.status == 0, "\(call.output)")
        try alice.process.waitForLine("the call joined") { $0.contains("→ joined") }
        let start = try ControlCLITests.parley(["collab", "start", "1", "Trip plan"] + a)
        #expect(start.status == 0 && start.output.contains("\"Trip plan\" active"), "\(start.output)")
        let id = String(start.output.prefix(36))
        try watch.waitForLine("the share") { $0.contains("collab") && $0.contains("Trip plan") }
        let notice = try ControlCLITests.parley(["collab", "notice", String(id.prefix(8)), "edit"] + a)
        #expect(notice.status == 0, "\(notice.output)")
        try watch.waitForLine("the notice") { $0.contains("notice") && $0.contains("[Alice] edited it") }
        let challengeRun = try ControlCLITests.parley(["collab", "challenge", id] + a)
        let challengeObject = try #require(try JSONSerialization.jsonObject(with: Data(challengeRun.output.utf8)) as? [String: Any])
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("collab-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let challengeFile = directory.appendingPathComponent("challenge.json")
        try JSONSerialization.data(withJSONObject: challengeObject["result"] ?? [:]).write(to: challengeFile)
        let prove = try ControlCLITests.parley(["collab", "prove", challengeFile.path] + b)
        let proofObject = try #require(try JSONSerialization.jsonObject(with: Data(prove.output.utf8)) as? [String: Any], "\(prove.output)")
        var file = try #require(proofObject["result"] as? [String: Any])
        let result = try #require(challengeObject["result"] as? [String: Any])
        for key in ["group", "nonce", "expires", "verifier"] { file[key] = result[key] }
        file["collaborationIdentifier"] = result["collaboration"]
        file["roots"] = [identity["root"] ?? ""]
        let proofFile = directory.appendingPathComponent("proof.json")
        try JSONSerialization.data(withJSONObject: file).write(to: proofFile)
        let verify = try ControlCLITests.parley(["identity", "verify", proofFile.path])
        #expect(verify.status == 0 && verify.output.contains("valid: \(identity["root"] as? String ?? "?")"), "\(verify.output)")
        file["group"] = "another-group"
        try JSONSerialization.data(withJSONObject: file).write(to: proofFile)
        let wrong = try ControlCLITests.parley(["identity", "verify", proofFile.path])
        #expect(wrong.status == 1 && wrong.output.contains("badSignature"), "\(wrong.output)")
        let list = try ControlCLITests.parley(["collab", "list"] + a)
        #expect(list.status == 0 && list.output.contains("owner") && list.output.contains("invited"), "\(list.output)")
    }
}
