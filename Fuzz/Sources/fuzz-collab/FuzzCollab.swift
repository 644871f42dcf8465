import Collaboration
import Foundation
import GroupActivities
import ParleyEngine
import ParleyIO

/// One input, two ways (docs/robustness.md, "Fuzzing"):
///
/// 1. The whole input (and each script line that starts with `{`) as a signed proof in JSON (`SignedProofJSON`),
///    checked by `ProofVerifier` against the statement of Scripts/collab-vectors.py and ten roots (persons 1–4 of
///    the vectors and six others; person 5 revoked): the JSON form must round-trip; the verdict must not change
///    when checked again; with a verifier that accepts every signature it must be the same unless the real one
///    said `badSignature`; a success must be one of the roots, the root the proof walks to, and the only one.
/// 2. A script, one step a line, against three collaboration centers in one group session — the owner Alice
///    (person 1's first device, verifier `sip:alice@127.0.0.1`) with a started collaboration, and a member Bob
///    (person 3's first device, person 3's other two devices known) — and a third, Carol (person 2's first device,
///    or person 4's or 5's when the script changes her). Steps are group messages of every collaboration type, raw
///    (as any of the three) or replayed from the last ones the centers sent (with JSON patches), messages patched
///    on their way, access requests, challenges, proofs, identity updates, time passing, members leaving and coming
///    back, starts, ends, notices and action outcomes (the step letters are in `step`). The owner's nonces are
///    deterministic (SHA-256 of "nonce-1", "nonce-2"…) and its clock starts at 10:00:00Z, so its first challenge
///    is the vectors' statement and their signatures (the seeds) are good proofs here too.
///    FUZZ_COLLAB_TRACE=1 prints each step and what the centers did (to read a crash's input).
///    Nothing may crash, messages may not loop, and: a proof a center accepts names a root that was invited or
///    granted before (and the one the member announced), spends a nonce that center issued for that collaboration
///    and had not expired, and no nonce is accepted twice; what Carol sends cannot change Bob's access to Alice's
///    collaboration; the nonces and collaborations stay bounded; no action outlives its deadline past a tick.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCollab(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    ProofCheck.run(bytes)
    var script = CollabScript.prototype
    script.run(bytes)
    return 0
}

// MARK: Fixed keys, roots and statement (Tests/CollaborationTests/Vectors/collab-proofs-v1.json)

enum Fixture {
    static let collaboration = "c0ffee00-0000-4000-8000-000000000001"
    static let session = "group-7f3a"
    static let verifier = "sip:alice@127.0.0.1"
    static let start = Date(timeIntervalSince1970: 1_796_119_200)  // 2026-12-01T10:00:00Z
    /// The vectors' statement: nonce SHA-256("nonce-1"), expires 10:01:00Z.
    static let statementHex =
        "7061726c65792d636f6c6c61622d70726f6f662d76310063306666656530302d303030302d343030302d383030302d3030303030303030303030310067726f75702d37663361003965336631353633323464343266306561346236663466636538316435366662643634613231343361336664643630613133306439633930653562346436383800323032362d31322d30315431303a30313a30305a007369703a616c696365403132372e302e302e31"
    static let personRoots = [
        "de04908d53aeb26f43c31a83fa6a34b5e2b25b5fae6e23c0330b20b37a30c956",
        "d9cc84e5147aa3ce31f6020e035acb8b3491ce7d7a8f2be267bdf0da39384b92",
        "b0aded474f1cfa93f92c7b1685b5f7d874b819eb506aeb293781ed969a614c88",
        "fd45b8d349a66de334b79e06cbb9e63ecb5030d5cd3bd4134f316e07a54c231b",
        "0381cd7be983d9f85a08637259896752402d7177e01492ba58e284efaa300a8a",
    ].map { identity($0) }
    /// person1-device0: Alice, the owner.
    static let ownerKey = key("""
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgJEfdmigg9gVNa0DZ
        3YRUnmPSFIBSEQlR5wwd6j6uNLGhRANCAASQGmuTXB7M6HVSCecSzsuH7URimBzn
        xz764iEUWFqcALMzC87lMVInNwoqp7l/uzn1HcgiNCRfYvAf4WSIiY3Z
        -----END PRIVATE KEY-----
        """)
    /// person3-device0: Bob, the member.
    static let memberKey = key("""
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg0r0J1HlFZSMBRXat
        nMlQh+pmniffRs6LbREWmlGj8g2hRANCAAR74u9iKWOal91gNuHYF5m8TvydEoWW
        eZwCmfDg+vfqvhbhFjUVjbQmXuzxy3jJWgaL7eb25EHdnfAOI8Q2ItNR
        -----END PRIVATE KEY-----
        """)
    /// person3-device1 and -device2, Bob's person's other devices.
    static let memberOtherDevices = [
        "0487a4a319ac15e9849e1cc46f96f66db8818af89b40fc66aa0a3c3cdd9782cad7f2029d44b87055028165853d0379bbcf3cde264e8ceba91fc467e0454d1bd2a9",
        "04615d8de059b0476e52c6f9eaa6da4e40fb9805b1e4bf9ce51e1bfea383467746bc7d8c69c3eac1db60680fcc490558f818f4f1f461d06e6898e4d70bfdd08982",
    ].map { Hex.decode($0)! }

    /// Device 0 of persons 2, 4 and 5 (Carol, as the script makes her), with their persons' other devices.
    static let strangers: [(pem: String, others: [String])] = [
        (
            """
            -----BEGIN PRIVATE KEY-----
            MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgK8AzmBM4WNTJ/XUV
            w6QyyhTbPhtgdasJNsyHF3C8KSKhRANCAAQnE3LfdXjG7uAuRVnTL+Kdr89uvF35
            SyS/Zm5Gb+6SAZ0V9gRnu92l5o42o6KC1b2QWR7+UmjaQHUUwteddfgd
            -----END PRIVATE KEY-----
            """,
            [
                "04506ab9480a9e8a9163531af0522707ea37f84f1adabb1fcf13102844aac83de71ce1112808b2a20f76a1cb233aa31d742f6e61d997f009f88a0af95d2590ad7b",
            ]),
        (
            """
            -----BEGIN PRIVATE KEY-----
            MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgE1rizfT6abUMXsA0
            KD1HGUS6WI0Uu2rAfb8HAo/Ud8+hRANCAAQ1P2BxuIPSQPI0xwl9X9180yVp1yi+
            S4JmbdbY9CYKEi7f3/8g9DqcAIwj7mnl9raiIqb0z4SeJtOunXm5o5kt
            -----END PRIVATE KEY-----
            """,
            [
                "0427159291d34cb62d8228ba19f996ee5f62c375d9ee4b0269e627053fec4a30138b928899fb2e61a1a1f0e3276f40df7a011abdf84c449ca78b2ba5192f5243fc",
                "0471887c1738963b68222a3019564bebb00c6b5bb54df01d74fa72539b087fd78ec0f85ca82102b8d0a6ba9b11c06cc688bdbfa7d4b3eabbb02d193485f024baec",
                "04a261406a83372918ed72db472cd966dff3b67eda45334e80f5e462d32b17640a5463630365f17802e1c9c05eec0be25c71d8a9d8b5eb45d886fe5752c6b8d43e",
                "04d9266c16971d54d2ec71a54cbfa12653fbfc3e8252cf7bdbf16e05ff3fd80eab5c9f23846d532543a0ec4d2d32a1ef47eb8940c111d324ebb18add25f0894047",
            ]),
        (
            """
            -----BEGIN PRIVATE KEY-----
            MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgBJNMz9kEPyJLC6Ug
            gmjdQBMfr+nQxqm1i/riaI8ds3OhRANCAARgRgtjFbXB8/vAOvlYXY4Yl6eoyXG2
            Gg/CQ+SBNogtoKRcrniq6FSQaEvKI1egD/HoWyPAFdB4ftGv3NLSvK32
            -----END PRIVATE KEY-----
            """,
            [
                "045e074d7e7546537a9608522896421753fe9cde3b49b5de3edd37d701e97ee3def3bd75227bf91d1c292ea681a598c3aabc2e2d7e17990c5eb7cfae61982de4ce",
                "04e36a225315ed2346b48cfb53a2a1e19323b8cf076ad88fcc612d6eae98ca6a4b145978ed4cf83460d9056f8c7112c9d4acbd9169f5fff446d235649ca3eec636",
                "048e660506386a30abd2c7498ad4baa7a1a72cd297d4390f18c1adad74a30721cb1fbec13e5e34408df5b29c719fda3737696436a06ce93a4660e6984f6f5e4771",
                "04afa9c27ed8d499a878ace05c660f8d2a91111e9c02265f4bd0665de7f69c71b6f68bbf4e6ab84c5b5ab591c06619ea0982f99d597be07dcfbaffa8ce527982c2",
                "0412947c86518c47341bfa0d5de18ad8d8037379d882af9135067c19470a0fa98eb41de64d5d3413d2e55db88dde92fdb6f0d5379c6b7f7c88ac6443cfd2bf910f",
                "04ca7dd1a9b45efb791cb29a36d87406f576279158e7551432f45b01963df4dfaae416a2f619e020a163ef931d4bc4b0e378729dc5fa4b3e487c5b14060639ff92",
                "04e7b86259c726ea3ba8bfaba0edd2d0401086c87b065dd2efe45de24280e0c7d63bf5c59fd6d96981001d6dd55bc4c81f51eae4bfbe2412ec3ed6b3e354b8426a",
            ]),
    ]

    static func identity(_ hex: String) -> PersonIdentity {
        guard let identity = PersonIdentity(hex: hex) else { preconditionFailure("bad fixture root \(hex)") }
        return identity
    }

    static func key(_ pem: String) -> DeviceKey {
        do { return try DeviceKey(pem: pem) } catch { preconditionFailure("bad fixture key: \(error)") }
    }
}

/// OpenSSL, but with nonces that are the same every run: the n-th is SHA-256("PREFIXn").
struct DeterministicCrypto: IdentityCrypto {
    final class Counter: @unchecked Sendable { var next = 1 }
    let base = OpenSSLIdentityCrypto()
    let counter = Counter()
    let prefix: String
    func sha256(_ bytes: [UInt8]) -> [UInt8] { base.sha256(bytes) }
    func isValidPublicKey(_ point: [UInt8]) -> Bool { base.isValidPublicKey(point) }
    func verify(publicKey: [UInt8], signatureDER: [UInt8], message: [UInt8]) -> Bool {
        base.verify(publicKey: publicKey, signatureDER: signatureDER, message: message)
    }
    func randomBytes(_ count: Int) -> [UInt8] {
        precondition(count == 32, "a nonce of \(count) bytes")
        defer { counter.next += 1 }
        return base.sha256(Array("\(prefix)\(counter.next)".utf8))
    }
    func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool { base.constantTimeEqual(a, b) }
}

/// OpenSSL for everything but signatures, which it takes on trust: it lets inputs far from the seeds reach the walk.
struct TrustingCrypto: IdentityCrypto {
    let base = OpenSSLIdentityCrypto()
    func sha256(_ bytes: [UInt8]) -> [UInt8] { base.sha256(bytes) }
    func isValidPublicKey(_ point: [UInt8]) -> Bool { base.isValidPublicKey(point) }
    func verify(publicKey: [UInt8], signatureDER: [UInt8], message: [UInt8]) -> Bool { true }
    func randomBytes(_ count: Int) -> [UInt8] { [UInt8](repeating: 0, count: count) }
    func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool { base.constantTimeEqual(a, b) }
}

// MARK: 1. The verifier alone

enum ProofCheck {
    static let crypto = OpenSSLIdentityCrypto()
    static let statement: [UInt8] = {
        let nonce = crypto.sha256(Array("nonce-1".utf8))
        guard let statement = ProofStatement(
            purpose: .collaboration(identifier: Fixture.collaboration, group: Fixture.session), nonce: nonce,
            expires: Fixture.start.addingTimeInterval(60), verifier: Fixture.verifier)
        else { preconditionFailure("the fixture statement") }
        precondition(Hex.encode(statement.bytes) == Fixture.statementHex, "the statement is not the vectors' statement")
        return statement.bytes
    }()
    static let roots: [PersonIdentity] =
        Array(Fixture.personRoots.prefix(4))
        + (1...6).map { PersonIdentity(rootHash: crypto.sha256(Array("other-person-\($0)".utf8)))! }
    static let revoked = [Fixture.personRoots[4]]

    static func check(_ signed: SignedIdentityProof, roots: [PersonIdentity], crypto: some IdentityCrypto) -> Result<PersonIdentity, ProofRejection> {
        ProofVerifier.check(signed, statement: statement, roots: roots, revoked: revoked, crypto: crypto)
    }

    static func run(_ bytes: [UInt8]) {
        guard case .success(let signed) = SignedProofJSON.decode(Data(bytes)) else { return }
        // The JSON form round-trips (hex is written lowercase, read in either case).
        let json = SignedProofJSON(signed)
        precondition(json.proof == .success(signed), "a proof does not survive its JSON form")
        guard let encoded = try? JSONEncoder().encode(json) else { preconditionFailure("a proof's JSON does not encode") }
        precondition(SignedProofJSON.decode(encoded) == .success(signed), "a proof does not survive JSON text")

        let verdict = check(signed, roots: roots, crypto: crypto)
        precondition(check(signed, roots: roots, crypto: crypto) == verdict, "two checks of one proof disagree")
        let trusting = check(signed, roots: roots, crypto: TrustingCrypto())
        precondition(trusting != .failure(.badSignature), "a signature taken on trust was refused")
        if verdict != .failure(.badSignature) {
            precondition(trusting == verdict, "the verdict \(verdict) depends on more than the signature (\(trusting))")
        }
        let walked = MerkleTree.walk(signed.proof, crypto: crypto)
        switch trusting {
        case .success(let root):
            precondition(roots.contains(root), "a success outside the roots")
            precondition(root.rootHash == walked, "a success that is not the root the proof walks to")
            // One proof, one person: without that root it is refused.
            let without = check(signed, roots: roots.filter { $0 != root }, crypto: TrustingCrypto())
            precondition(without == .failure(.rootNotInCollaboration), "a proof that proves two people: \(without)")
        case .failure(.revoked):
            precondition(revoked.contains { $0.rootHash == walked }, "revoked, but not a revoked root")
        case .failure(.rootNotInCollaboration):
            precondition(!(roots + revoked).contains { $0.rootHash == walked }, "refused a root that is there")
        case .failure(.malformed):
            let proof = signed.proof
            precondition(
                !proof.inclusionHashes.allSatisfy { $0.count == 32 } || signed.signatureData.isEmpty || proof.publicKeyIndex < 0
                    || (proof.inclusionHashes.count <= ProofVerifier.maxInclusionHashes
                        && proof.publicKeyIndex >= 1 << proof.inclusionHashes.count),
                "malformed without a reason")
        case .failure(.proofTooLong):
            precondition(signed.proof.inclusionHashes.count > ProofVerifier.maxInclusionHashes, "too long, but short")
        case .failure(.badPublicKey):
            precondition(!crypto.isValidPublicKey(signed.proof.publicKey), "a good key refused")
        case .failure(let other):
            preconditionFailure("the stateless verifier answered \(other)")
        }
    }
}

// MARK: 2. Two centers in a group session

struct CollabScript {
    static let owner = "alice"
    static let member = "bob"
    static let stranger = "carol"
    static let capacity = 16
    /// FUZZ_COLLAB_TRACE=1: each step and what the centers did, on stderr (to read a crash's input).
    static let trace = ProcessInfo.processInfo.environment["FUZZ_COLLAB_TRACE"] == "1"

    static let prototype: CollabScript = {
        var script = CollabScript()
        script.setUp()
        // The harness itself: Bob's request for access is granted.
        var check = script
        check.run(Array("R".utf8))
        precondition(check.centers[member]!.info(Fixture.collaboration)?.access == .granted, "the access flow does not work")
        return script
    }()

    var centers: [String: CollaborationCenter] = [:]
    let ownerCrypto = DeterministicCrypto(prefix: "nonce-")
    let memberCrypto = DeterministicCrypto(prefix: "bob-nonce-")
    let strangerCrypto = DeterministicCrypto(prefix: "carol-nonce-")
    /// Who is in the session.
    var present: Set<String> = []
    var now = Fixture.start
    var autoFulfil = true
    var depth = 0
    /// The last message of each type a center sent, for replays.
    var last: [String: (from: String, data: JSONValue)] = [:]
    /// Who shared the fixture's collaboration with Bob, as far as Bob knows.
    var sharedBy: String?
    /// The `keep` messages, newest last, replayed to a member who joins (as the host's journal does; the centers
    /// now send nothing with `keep`, and tell newcomers themselves).
    var kept: [(from: String, type: String, data: JSONValue)] = []
    /// Patches for the next message of a type a center sends (a man in the middle).
    var intercept: [String: JSONValue] = [:]
    /// Nonces the centers issued, by center and nonce: collaboration and expiry.
    var issued: [Issue: (collaboration: String, expires: Date)] = [:]
    /// The nonce a step spends, if it is one that does.
    var spending: String?
    /// Nonces an accepted proof spent.
    var spent: Set<Issue> = []

    struct Issue: Hashable {
        var node: String
        var nonce: String
    }
    var collaborationCount = 0

    static func participant(_ id: String) -> GroupParticipant { GroupParticipant(id: id, name: id.capitalized) }

    mutating func setUp() {
        centers[Self.owner] = CollaborationCenter(
            signer: Fixture.ownerKey, verifier: Fixture.verifier, crypto: ownerCrypto, actionTimeout: 10,
            nonces: NonceStore(ttl: 60, capacity: Self.capacity))
        centers[Self.member] = CollaborationCenter(
            signer: Fixture.memberKey, otherDevices: Fixture.memberOtherDevices, verifier: "sip:bob@127.0.0.1",
            crypto: memberCrypto, actionTimeout: 10)
        precondition(centers[Self.owner]!.identity.person == Fixture.personRoots[0], "Alice is not person 1")
        precondition(centers[Self.member]!.identity.person == Fixture.personRoots[2], "Bob is not person 3")
        centers[Self.stranger] = stranger(0)
        precondition(centers[Self.stranger]!.identity.person == Fixture.personRoots[1], "Carol is not person 2")
        join(Self.owner)
        join(Self.member)
        join(Self.stranger)
        start(on: Self.owner, identifier: Fixture.collaboration)
        let people = centers[Self.owner]!.info(Fixture.collaboration)?.participants ?? []
        precondition(
            Set(people.filter { $0.access == .invited }.map(\.identity)) == [Fixture.personRoots[1], Fixture.personRoots[2]],
            "the collaboration did not invite persons 2 and 3: \(people)")
        precondition(centers[Self.member]!.info(Fixture.collaboration) != nil, "the share did not reach Bob")
    }

    /// Carol's center as device 0 of person 2, 4 or 5.
    func stranger(_ which: Int) -> CollaborationCenter {
        let (pem, others) = Fixture.strangers[which % Fixture.strangers.count]
        return CollaborationCenter(
            signer: Fixture.key(pem), otherDevices: others.map { Hex.decode($0)! }, verifier: "sip:carol@127.0.0.1", crypto: strangerCrypto,
            actionTimeout: 10)
    }

    // MARK: Moving effects

    /// Calls a center and carries out what it asks, checking what can be checked of it.
    mutating func call(_ node: String, _ body: (inout CollaborationCenter) -> [CollaborationEffect]) {
        guard centers[node] != nil else { return }
        let before = accessByCollaboration(node)
        let nonce = spending
        spending = nil
        let effects = body(&centers[node]!)
        if Self.trace {
            for effect in effects {
                switch effect {
                case .send(_, let type, let data, let to, _): Self.log("  \(node) sends \(type) to \(to.map { $0.sorted().description } ?? "all"): \(data)")
                case .verified(let collaboration, let participant, let result):
                    Self.log("  \(node) verified \(participant ?? "-") for \(collaboration): \(result)")
                case .log(let line): Self.log("  \(node) log: \(line)")
                case .changed(let info): Self.log("  \(node) changed \(info.highlight.identifier): \(info.state) access \(info.access.name) \(info.participants.map { "\($0.identity.hex.prefix(8))=\($0.access)" })")
                default: break
                }
            }
        }
        for effect in effects {
            switch effect {
            case .verified(let collaboration, let participant, .success(let root)):
                // The owner's own person is stored granted from the start (its other devices prove into it), unlisted.
                let prior = root == centers[node]!.identity.person ? .granted : before[collaboration]?[root]
                precondition(prior == .invited || prior == .granted, "a proof by \(root) accepted while its access was \(String(describing: prior))")
                if let participant {
                    precondition(centers[node]!.identity(of: participant, in: Fixture.session) == root, "\(participant) proved a person it did not announce")
                }
                guard let nonce else { preconditionFailure("a proof accepted without a nonce") }
                let key = Issue(node: node, nonce: nonce)
                guard let issue = issued[key] else { preconditionFailure("\(node) accepted a proof for a nonce it never issued: \(nonce)") }
                precondition(issue.collaboration == collaboration, "a nonce of \(issue.collaboration) accepted for \(collaboration)")
                precondition(now < issue.expires, "an expired nonce accepted")
                precondition(spent.insert(key).inserted, "a nonce accepted twice: \(nonce)")
                precondition(
                    root == centers[node]!.identity.person
                        || centers[node]!.info(collaboration)?.participants.contains { $0.identity == root && $0.access == .granted } == true,
                    "an accepted root is not granted")
            case .changed(let info):
                precondition(Set(info.participants.map(\.identity)).count == info.participants.count, "a person listed twice")
            default:
                break
            }
        }
        carry(effects, from: node)
    }

    mutating func carry(_ effects: [CollaborationEffect], from node: String) {
        depth += 1
        defer { depth -= 1 }
        precondition(depth < 32, "collaboration messages loop")
        for effect in effects {
            switch effect {
            case .send(let session, let type, let sent, let to, let keep):
                precondition(CollaborationWire.isCollaboration(type), "a center sent a \(type)")
                let data = Self.patched(sent, intercept.removeValue(forKey: type))
                precondition(session == Fixture.session, "a message for another session")
                precondition(to.map { !$0.isEmpty } ?? true, "a message for nobody")
                last[type] = (node, sent)
                if keep && to == nil {
                    kept.append((node, type, data))
                    if kept.count > 32 { kept.removeFirst() }
                }
                if type == CollaborationWire.challenge, case .object(let fields) = sent,
                    case .string(let nonce)? = fields["nonce"], case .string(let collaboration)? = fields["collaboration"],
                    case .string(let expires)? = fields["expires"], let date = ProofStatement.date(expires)
                {
                    issued[Issue(node: node, nonce: Self.normal(nonce))] = (collaboration, date)
                }
                let recipients = present.filter { $0 != node && (to == nil || to!.contains($0)) }.sorted()
                deliver(type, from: node, to: recipients, data, session: session)
            case .handle(let action):
                if case .start = action.kind { continue }
                guard autoFulfil, !action.requiresConfirmation else { continue }
                call(node) { [now] in $0.complete(action.id, with: .fulfilled(url: nil, identifier: nil), now: now).1 }
            default:
                break
            }
        }
    }

    mutating func deliver(_ type: String, from source: String, to recipients: [String], _ data: JSONValue, session: String = Fixture.session) {
        for recipient in recipients where centers[recipient] != nil {
            let delivery = GroupDelivery(session: session, seq: 0, source: Self.participant(source), type: type, data: data, mode: .reliable)
            if type == CollaborationWire.proof, case .object(let fields) = data, case .string(let nonce)? = fields["nonce"] {
                spending = Self.normal(nonce)
            }
            // Whose share Bob took the collaboration from: the first one wins, and Carol may share the identifier once
            // Bob has forgotten Alice's (an end, a rejoin).
            if recipient == Self.member, centers[recipient]!.info(Fixture.collaboration) == nil { sharedBy = nil }
            let known = centers[recipient]!.info(Fixture.collaboration) != nil
            let guarded = source == Self.stranger && recipient == Self.member && sharedBy == Self.owner ? centers[recipient]!.info(Fixture.collaboration) : nil
            call(recipient) { [now] in $0.received(delivery, now: now) }
            if recipient == Self.member, !known, centers[recipient]!.info(Fixture.collaboration) != nil { sharedBy = source }
            if let guarded, let after = centers[recipient]!.info(Fixture.collaboration) {
                precondition(after.access == guarded.access && after.state == guarded.state, "Carol changed Bob's access to Alice's collaboration")
            }
        }
    }

    /// A message as if `source` had sent it (the group messenger vouches for the source; a center may even be
    /// handed its own).
    mutating func inject(_ type: String, from source: String, to recipients: [String], _ data: JSONValue, session: String = Fixture.session) {
        deliver(type, from: source, to: recipients.filter { present.contains($0) }, data, session: session)
    }

    /// A nonce's hex as the owner reads it (either case).
    static func normal(_ nonce: String) -> String { Hex.decode(nonce).map(Hex.encode) ?? nonce }

    func accessByCollaboration(_ node: String) -> [String: [PersonIdentity: ParticipantAccess]] {
        var result: [String: [PersonIdentity: ParticipantAccess]] = [:]
        for info in centers[node]!.collaborations where info.isOwner {
            result[info.highlight.identifier] = Dictionary(info.participants.map { ($0.identity, $0.access) }, uniquingKeysWith: { a, _ in a })
        }
        return result
    }

    // MARK: Membership

    mutating func join(_ name: String) {
        guard !present.contains(name) else { return }
        let others = present.sorted().map(Self.participant)
        present.insert(name)
        if centers[name] != nil {
            call(name) { $0.sessionJoined(Fixture.session, local: Self.participant(name), active: others + [Self.participant(name)]) }
            for message in kept where message.from != name && present.contains(message.from) {
                deliver(message.type, from: message.from, to: [name], message.data)
            }
        }
        for other in present.sorted() where other != name {
            call(other) { [now] in $0.participantsChanged(Fixture.session, added: [Self.participant(name)], removed: [], now: now) }
        }
    }

    mutating func leave(_ name: String) {
        guard present.remove(name) != nil else { return }
        call(name) { $0.sessionEnded(Fixture.session) }
        for other in present.sorted() {
            call(other) { [now] in $0.participantsChanged(Fixture.session, added: [], removed: [Self.participant(name)], now: now) }
        }
    }

    mutating func start(on node: String, identifier: String) {
        guard centers[node] != nil else { return }
        let metadata = CollaborationMetadata(localIdentifier: "local-\(identifier)", title: "Plan", initiatorHandle: "sip:\(node)@127.0.0.1")
        let (result, produced) = centers[node]!.start(metadata, on: Fixture.session, now: now)
        carry(produced, from: node)
        guard case .success(let action) = result else { return }
        call(node) { [now] in $0.complete(action.id, with: .fulfilled(url: "parley://collab/\(identifier)", identifier: identifier), now: now).1 }
    }

    // MARK: The script

    /// JSON, else the text as a JSON string.
    static func json(_ bytes: ArraySlice<UInt8>) -> JSONValue {
        (try? JSONDecoder().decode(JSONValue.self, from: Data(bytes))) ?? .string(String(decoding: bytes, as: UTF8.self))
    }

    /// `base` with `patch` laid over it: objects merge key by key (a null removes the key), anything else replaces.
    static func patched(_ base: JSONValue, _ patch: JSONValue?) -> JSONValue {
        guard let patch else { return base }
        guard case .object(var fields) = base, case .object(let changes) = patch else { return patch }
        for (key, value) in changes {
            if value == .null { fields[key] = nil } else { fields[key] = patched(fields[key] ?? .null, value) }
        }
        return .object(fields)
    }

    static let types = [
        CollaborationWire.identity, CollaborationWire.share, CollaborationWire.ended, CollaborationWire.challengeRequest,
        CollaborationWire.challenge, CollaborationWire.proof, CollaborationWire.access, CollaborationWire.notice,
    ]

    /// The latest nonce the owner issued for the collaboration, or a fresh one.
    mutating func currentNonce() -> String? {
        if let key = issued.filter({ $0.key.node == Self.owner && $0.value.collaboration == Fixture.collaboration })
            .max(by: { ($0.value.expires, $0.key.nonce) < ($1.value.expires, $1.key.nonce) })?.key, !spent.contains(key)
        {
            return key.nonce
        }
        return issueChallenge(Fixture.collaboration)?.nonce
    }

    mutating func issueChallenge(_ identifier: String) -> CollaborationChallenge? {
        guard case .success(let challenge)? = centers[Self.owner]?.challenge(for: identifier, now: now) else { return nil }
        if let expires = ProofStatement.date(challenge.expires) { issued[Issue(node: Self.owner, nonce: challenge.nonce)] = (identifier, expires) }
        return challenge
    }

    mutating func run(_ input: [UInt8]) {
        for crypto in [ownerCrypto, memberCrypto, strangerCrypto] { crypto.counter.next = 1 }
        var steps = 0
        for line in input.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
            steps += 1
            guard steps <= 64 else { break }
            step(line)
            checkBounds()
        }
    }

    static func log(_ text: String) { FileHandle.standardError.write(Data((text + "\n").utf8)) }

    /// One line: its first byte says what, the rest (after an optional space) is the argument.
    ///
    ///     {…}        a proof (SignedProofJSON) the owner verifies against its latest challenge
    ///     R [id]     Bob asks for access (challenge request, challenge, proof, answer)
    ///     Q [id]     the owner issues a challenge
    ///     P C A H I  the last proof, challenge, access, share or identity again, patched by the JSON argument
    ///     0…7 r JSON a raw message of type identity, share, ended, challengeRequest, challenge, proof, access,
    ///                notice; r is the route (see below)
    ///     8 T JSON   a raw message of any type T, Bob to Alice      9 JSON   a message of a session not joined
    ///     M d JSON   the next message of type d (0…7) a center sends is patched on its way
    ///     U seed     Bob's person changes devices (signed update) · T [s] time passes (30 s) and every center ticks
    ///     L J        Bob leaves, joins · l j Carol leaves, joins · K d Carol comes back as person 2, 4 or 5
    ///     S s [id]   Alice, Bob starts a collaboration · E [id] Alice ends one · N n [kind trigger] Bob, Alice
    ///                posts a notice · F handlers stop (start) fulfilling updates · X [f] waiting actions fail (f: fulfil)
    ///     other      the line as a message of the type its first byte picks, to Alice
    mutating func step(_ line: ArraySlice<UInt8>) {
        if Self.trace { Self.log("step: \(String(decoding: line.prefix(120), as: UTF8.self))") }
        let op = line[line.startIndex]
        var argument = line.dropFirst()
        if argument.first == UInt8(ascii: " ") { argument = argument.dropFirst() }
        let text = String(decoding: argument, as: UTF8.self)
        let named = text.isEmpty ? Fixture.collaboration : text
        switch op {
        case UInt8(ascii: "{"):
            // A proof, checked by the owner against its latest challenge of the collaboration.
            ProofCheck.run(Array(line))
            guard case .success(let proof) = SignedProofJSON.decode(Data(line)), let nonce = currentNonce() else { return }
            spending = nonce
            call(Self.owner) { [now] in $0.verify(proof, nonce: nonce, for: Fixture.collaboration, participant: nil, now: now).1 }
        case UInt8(ascii: "R"):
            call(Self.member) { $0.requestAccess(named).1 }
        case UInt8(ascii: "Q"):
            _ = issueChallenge(named)
        case UInt8(ascii: "P"), UInt8(ascii: "C"), UInt8(ascii: "A"), UInt8(ascii: "H"), UInt8(ascii: "I"):
            // A replay of the last proof, challenge, access, share or identity, patched by the argument.
            let type = [
                UInt8(ascii: "P"): CollaborationWire.proof, UInt8(ascii: "C"): CollaborationWire.challenge,
                UInt8(ascii: "A"): CollaborationWire.access, UInt8(ascii: "H"): CollaborationWire.share,
                UInt8(ascii: "I"): CollaborationWire.identity,
            ][op]!
            guard let message = last[type] else { return }
            let data = Self.patched(message.data, argument.isEmpty ? nil : Self.json(argument))
            inject(type, from: message.from, to: [Self.owner, Self.member], data)
        case UInt8(ascii: "0")...UInt8(ascii: "7"):
            // A raw message: the type by the digit, the route by the next byte (m Alice to Bob, c Carol to Alice, d Carol
            // to Bob, O Alice to herself, x Alice to Carol, y Bob to Carol, else Bob to Alice), then its JSON.
            let type = Self.types[Int(op - UInt8(ascii: "0"))]
            let route = argument.first ?? 0
            let body = argument.dropFirst()
            let (source, recipient): (String, String) =
                switch route {
                case UInt8(ascii: "m"): (Self.owner, Self.member)
                case UInt8(ascii: "c"): (Self.stranger, Self.owner)
                case UInt8(ascii: "d"): (Self.stranger, Self.member)
                case UInt8(ascii: "O"): (Self.owner, Self.owner)
                case UInt8(ascii: "x"): (Self.owner, Self.stranger)
                case UInt8(ascii: "y"): (Self.member, Self.stranger)
                default: (Self.member, Self.owner)
                }
            inject(type, from: source, to: [recipient], Self.json(body))
        case UInt8(ascii: "8"):
            // Any type: up to the first space.
            let type = String(decoding: argument.prefix { $0 != UInt8(ascii: " ") }, as: UTF8.self)
            inject(type, from: Self.member, to: [Self.owner], Self.json(argument.drop { $0 != UInt8(ascii: " ") }.dropFirst()))
        case UInt8(ascii: "9"):
            // A session nobody here joined: ignored.
            guard let owner = centers[Self.owner] else { return }
            let delivery = GroupDelivery(
                session: "elsewhere", seq: 0, source: Self.participant(Self.member), type: CollaborationWire.proof, data: Self.json(argument),
                mode: .reliable)
            var copy = owner
            precondition(copy.received(delivery, now: now).isEmpty, "a message of a session not joined was read")
        case UInt8(ascii: "M"):
            // `M<digit> JSON`: the next message of that type a center sends is patched on its way.
            guard let digit = argument.first, (UInt8(ascii: "0")...UInt8(ascii: "7")).contains(digit) else { return }
            var patch = argument.dropFirst()
            if patch.first == UInt8(ascii: " ") { patch = patch.dropFirst() }
            intercept[Self.types[Int(digit - UInt8(ascii: "0"))]] = Self.json(patch)
        case UInt8(ascii: "U"):
            identityUpdate(to: argument)
        case UInt8(ascii: "T"):
            now.addTimeInterval(TimeInterval(Int(text).map { Swift.min(Swift.max($0, 0), 100_000) } ?? 30))
            for node in [Self.owner, Self.member, Self.stranger] {
                call(node) { [now] in $0.tick(now: now) }
                if let center = centers[node] {
                    precondition(center.coordinator.waiting.allSatisfy { $0.deadline > now }, "an action outlived its deadline")
                }
            }
        case UInt8(ascii: "L"): leave(Self.member)
        case UInt8(ascii: "J"): join(Self.member)
        case UInt8(ascii: "l"): leave(Self.stranger)
        case UInt8(ascii: "j"): join(Self.stranger)
        case UInt8(ascii: "K"):
            // Carol leaves and comes back as another person (`K0` person 2, `K1` person 4, `K2` person 5).
            leave(Self.stranger)
            centers[Self.stranger] = stranger(Int(argument.first ?? 0))
            join(Self.stranger)
        case UInt8(ascii: "S"), UInt8(ascii: "s"):
            collaborationCount += 1
            start(on: op == UInt8(ascii: "S") ? Self.owner : Self.member, identifier: text.isEmpty ? "collab-\(collaborationCount)" : text)
        case UInt8(ascii: "E"):
            call(Self.owner) { $0.end(named).1 }
        case UInt8(ascii: "N"), UInt8(ascii: "n"):
            // A notice: `kind trigger`.
            let parts = text.split(separator: " ", maxSplits: 1).map(String.init)
            let event =
                parts.count == 2 ? HighlightEvent(kind: parts[0], trigger: parts[1]) ?? .change(.edit) : .mention(Fixture.personRoots[2])
            let node = op == UInt8(ascii: "N") ? Self.member : Self.owner
            if case .success(let effects)? = centers[node]?.postNotice(event, for: Fixture.collaboration) { carry(effects, from: node) }
        case UInt8(ascii: "F"):
            autoFulfil.toggle()
        case UInt8(ascii: "X"):
            // The waiting actions: fulfilled (`X f`) or failed.
            for node in [Self.owner, Self.member, Self.stranger] {
                for action in centers[node]?.coordinator.waiting ?? [] {
                    let outcome: CollaborationActionOutcome = text == "f" ? .fulfilled(url: nil, identifier: nil) : .failed
                    call(node) { [now] in $0.complete(action.id, with: outcome, now: now).1 }
                }
            }
        default:
            // Anything else: the line as a message of the type and route its first byte picks.
            let type = Self.types[Int(op) % Self.types.count]
            inject(type, from: op & 0x80 == 0 ? Self.member : Self.stranger, to: [Self.owner], Self.json(argument))
        }
    }

    /// Bob's person changes its device set to `seed`'s (a new root): his device signs the change against a fresh
    /// challenge and the owner replaces the root, keeping its access.
    mutating func identityUpdate(to seed: ArraySlice<UInt8>) {
        guard let member = centers[Self.member], let challenge = issueChallenge(Fixture.collaboration) else { return }
        let old = member.identity.person
        guard let new = PersonIdentity(rootHash: OpenSSLIdentityCrypto().sha256(Array(seed))),
            case .success(let proof) = member.proveIdentityUpdate(
                from: old, oldDevices: Fixture.memberOtherDevices, to: new, challenge: challenge)
        else { preconditionFailure("Bob cannot sign a change of his own devices") }
        let before = accessByCollaboration(Self.owner)[Fixture.collaboration]
        let (result, effects) = centers[Self.owner]!.replaceIdentity(old, with: new, proof: proof, nonce: challenge.nonce, for: Fixture.collaboration, now: now)
        if Self.trace { Self.log("  alice replaced \(old.hex.prefix(8)) with \(new.hex.prefix(8)): \(result)") }
        if case .success = result {
            let prior = before?[old]
            precondition(prior == .invited || prior == .granted, "a device set changed for a root whose access was \(String(describing: prior))")
            let after = accessByCollaboration(Self.owner)[Fixture.collaboration]
            precondition(after?[new] == prior && (new == old || after?[old] == nil), "the new root did not take the old one's access")
        }
        carry(effects, from: Self.owner)
    }

    func checkBounds() {
        for (name, center) in centers {
            precondition(center.collaborations.count <= CollaborationCenter.maxCollaborations, "\(name) keeps too many collaborations")
            precondition(center.nonces.remembered <= center.nonces.capacity, "\(name) remembers too many nonces")
            precondition(center.nonces.outstanding(now: now) <= center.nonces.capacity, "too many outstanding nonces")
        }
    }
}
