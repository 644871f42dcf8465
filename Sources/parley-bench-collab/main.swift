import Collaboration
import CommandLineSupport
import Foundation
import ParleyEngine
import ParleyIO

// parley-bench-collab: collaboration identity proofs an owner verifies per second, on one thread. Scripts/bench-collab
// runs it beside `openssl speed ecdsap256` (the baseline) and prints the ratio.
//
//   setup     one person with 5 device keys (a tree of 5 leaves: proofs of 3 hashes) among 10 roots (9 random);
//             256 nonces, each with a proof signed by device i % 5 over its statement (parley-collab-proof-v1, one
//             collaboration and group, the owner's verifier, expiry 60 s after a fixed `now`)
//   proofs    the owner's path for one proof, as CollaborationCenter.verify takes it: issue the nonce in a NonceStore,
//             consume it, build the ProofStatement, ProofVerifier.check with OpenSSLIdentityCrypto (as an existential,
//             as the center holds it) — key check, ECDSA verify, the walk, 10 constant-time compares; every one must
//             name the person
//   p256      the baseline, in the same process: P256.verify of the same (key, signature, statement) triples
//   --breakdown  also: P256.isValidPublicKey alone, and the proof path with a crypto whose verify does nothing
//
// Each phase runs for --seconds S of this thread's CPU time (default 2), the phases in turn, --repeats R times
// (default 5). A run's rate is iterations ÷ on-CPU time (openssl speed divides by CPU time too); wall-clock rates
// are shown beside. One line per run goes to stderr, then the medians to stdout:
// `proofs_per_second: N`, `p256_verify_per_second: N`, `ratio_in_process: X`; `--json` prints one JSON object.

struct Options {
    var seconds = 2.0
    var repeats = 5
    var json = false
    var breakdown = false

    static let usage = "usage: parley-bench-collab [--seconds S] [--repeats R] [--breakdown] [--json]"

    init(_ arguments: [String]) throws(UsageError) {
        var arguments = Arguments(arguments)
        if arguments.flag("--help", "-h") {
            print(Self.usage)
            exit(0)
        }
        json = arguments.flag("--json")
        breakdown = arguments.flag("--breakdown")
        seconds = try arguments.option("--seconds", as: "a number of seconds from 0.05 to 600") { Double($0).flatMap { (0.05...600).contains($0) ? $0 : nil } } ?? seconds
        repeats = try arguments.option("--repeats", as: "a count from 1 to 100", in: 1...100) ?? repeats
        try arguments.finish()
    }
}

func progress(_ line: String) { FileHandle.standardError.write(Data("bench-collab: \(line)\n".utf8)) }

/// CPU time of this thread (user + system), in seconds.
func threadCPUTime() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

func wallTime() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return 0 }
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

struct Rate {
    var cpu: Double
    var wall: Double
}

/// Runs `body(i)` for i = 0, 1, 2… in batches until `seconds` of this thread's CPU time have gone.
func measure(seconds: Double, _ body: (Int) -> Void) -> Rate {
    let batch = 32
    var count = 0
    let cpuStart = threadCPUTime()
    let wallStart = wallTime()
    var cpu = 0.0
    repeat {
        for index in count..<(count + batch) { body(index) }
        count += batch
        cpu = threadCPUTime() - cpuStart
    } while cpu < seconds
    return Rate(cpu: Double(count) / cpu, wall: Double(count) / (wallTime() - wallStart))
}

/// OpenSSL without the signature check: what the rest of the path costs.
struct NoVerifyCrypto: IdentityCrypto {
    let base = OpenSSLIdentityCrypto()
    func sha256(_ bytes: [UInt8]) -> [UInt8] { base.sha256(bytes) }
    func isValidPublicKey(_ point: [UInt8]) -> Bool { base.isValidPublicKey(point) }
    func verify(publicKey: [UInt8], signatureDER: [UInt8], message: [UInt8]) -> Bool { !signatureDER.isEmpty }
    func randomBytes(_ count: Int) -> [UInt8] { base.randomBytes(count) }
    func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool { base.constantTimeEqual(a, b) }
}

struct Fixture {
    static let proofCount = 256
    static let deviceCount = 5
    static let collaboration = "c0ffee00-0000-4000-8000-000000000001"
    static let group = "5f0c6a1e-3b8d-4c1e-9a57-0d2b7e4c9f10"
    static let verifier = "sip:alice@127.0.0.1"
    static let now = Date(timeIntervalSince1970: 1_796_119_200)

    let person: PersonIdentity
    let roots: [PersonIdentity]
    let nonces: [[UInt8]]
    let proofs: [SignedIdentityProof]
    /// The signed bytes of each proof, for the baseline.
    let statements: [[UInt8]]
    let ttl: TimeInterval = 60

    init() {
        let crypto = OpenSSLIdentityCrypto()
        let devices = (0..<Self.deviceCount).map { _ in DeviceKey.generate() }
        guard let tree = MerkleTree(publicKeys: devices.map(\.publicKey), crypto: crypto) else { preconditionFailure("no tree") }
        person = tree.identity
        var others = (0..<9).map { _ in PersonIdentity(rootHash: SecureRandom.bytes(32))! }
        others.insert(person, at: 4)
        roots = others
        // The expiry a NonceStore gives a nonce issued at `now`.
        let expires = Date(timeIntervalSince1970: (Self.now.timeIntervalSince1970 + ttl).rounded(.down))
        var nonces: [[UInt8]] = []
        var proofs: [SignedIdentityProof] = []
        var statements: [[UInt8]] = []
        for index in 0..<Self.proofCount {
            let nonce = SecureRandom.bytes(32)
            let device = devices[index % Self.deviceCount]
            guard let statement = ProofStatement(
                purpose: .collaboration(identifier: Self.collaboration, group: Self.group), nonce: nonce, expires: expires,
                verifier: Self.verifier),
                let proof = tree.proof(for: device.publicKey, crypto: crypto)
            else { preconditionFailure("no statement or proof") }
            nonces.append(nonce)
            statements.append(statement.bytes)
            proofs.append(SignedIdentityProof(proof: proof, signatureData: device.sign(statement.bytes)))
        }
        self.nonces = nonces
        self.proofs = proofs
        self.statements = statements
    }
}

/// The owner's path for proof `index % 256`; false unless it named the person.
func verifyProof(_ index: Int, fixture: Fixture, store: inout NonceStore, crypto: any IdentityCrypto) -> Bool {
    let slot = index % Fixture.proofCount
    let nonce = fixture.nonces[slot]
    _ = store.issue(nonce, scope: Fixture.collaboration, now: Fixture.now)
    guard case .success(let expires) = store.consume(nonce, scope: Fixture.collaboration, now: Fixture.now),
        let statement = ProofStatement(
            purpose: .collaboration(identifier: Fixture.collaboration, group: Fixture.group), nonce: nonce, expires: expires,
            verifier: Fixture.verifier)
    else { return false }
    return ProofVerifier.check(fixture.proofs[slot], statement: statement.bytes, roots: fixture.roots, crypto: crypto)
        == .success(fixture.person)
}

func run() throws {
    let options: Options
    do { options = try Options(Array(CommandLine.arguments.dropFirst())) } catch {
        FileHandle.standardError.write(Data("parley-bench-collab: \(error)\n\(Options.usage)\n".utf8))
        exit(ExitCode.usage.rawValue)
    }
    let fixture = Fixture()
    let crypto: any IdentityCrypto = OpenSSLIdentityCrypto()
    let noVerify: any IdentityCrypto = NoVerifyCrypto()
    var store = NonceStore()
    var failures = 0
    progress("\(Fixture.proofCount) proofs by \(Fixture.deviceCount) devices of one person (\(fixture.proofs[0].proof.inclusionHashes.count) inclusion hashes), \(fixture.roots.count) roots; \(options.repeats) runs of \(options.seconds) CPU s per phase")

    // Warm-up: every proof once, each checked (and OpenSSL's lazy initialisation out of the way).
    for index in 0..<Fixture.proofCount where !verifyProof(index, fixture: fixture, store: &store, crypto: crypto) { failures += 1 }
    guard failures == 0 else { throw BenchFailure("\(failures) of \(Fixture.proofCount) proofs were refused") }

    var proofRates: [Rate] = []
    var p256Rates: [Rate] = []
    var keyRates: [Rate] = []
    var noVerifyRates: [Rate] = []
    for run in 1...options.repeats {
        let proofs = measure(seconds: options.seconds) { index in
            if !verifyProof(index, fixture: fixture, store: &store, crypto: crypto) { failures += 1 }
        }
        let p256 = measure(seconds: options.seconds) { index in
            let slot = index % Fixture.proofCount
            if !P256.verify(publicKey: fixture.proofs[slot].proof.publicKey, signatureDER: fixture.proofs[slot].signatureData,
                message: fixture.statements[slot])
            { failures += 1 }
        }
        proofRates.append(proofs)
        p256Rates.append(p256)
        var line = String(
            format: "run %d: proofs %.0f/s (wall %.0f/s), P256.verify %.0f/s (wall %.0f/s), ratio %.3f", run, proofs.cpu, proofs.wall,
            p256.cpu, p256.wall, proofs.cpu / p256.cpu)
        if options.breakdown {
            let keys = measure(seconds: options.seconds / 2) { index in
                if !P256.isValidPublicKey(fixture.proofs[index % Fixture.proofCount].proof.publicKey) { failures += 1 }
            }
            let rest = measure(seconds: options.seconds / 2) { index in
                if !verifyProof(index, fixture: fixture, store: &store, crypto: noVerify) { failures += 1 }
            }
            keyRates.append(keys)
            noVerifyRates.append(rest)
            line += String(format: "; isValidPublicKey %.0f/s, proof path without verify %.0f/s", keys.cpu, rest.cpu)
        }
        progress(line)
        guard failures == 0 else { throw BenchFailure("\(failures) verifications failed") }
    }

    let proofs = median(proofRates.map(\.cpu))
    let p256 = median(p256Rates.map(\.cpu))
    if options.json {
        var object: [String: Any] = [
            "seconds": options.seconds, "repeats": options.repeats, "proofs": Fixture.proofCount, "devices": Fixture.deviceCount,
            "roots": fixture.roots.count, "inclusionHashes": fixture.proofs[0].proof.inclusionHashes.count,
            "proofsPerSecond": proofs, "proofsPerSecondWall": median(proofRates.map(\.wall)),
            "p256VerifyPerSecond": p256, "p256VerifyPerSecondWall": median(p256Rates.map(\.wall)),
            "ratioInProcess": proofs / p256,
            "runs": zip(proofRates, p256Rates).map { ["proofs": $0.cpu, "p256Verify": $1.cpu] },
        ]
        if options.breakdown {
            object["isValidPublicKeyPerSecond"] = median(keyRates.map(\.cpu))
            object["proofPathWithoutVerifyPerSecond"] = median(noVerifyRates.map(\.cpu))
        }
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        print(String(decoding: data, as: UTF8.self))
    } else {
        print(String(format: "proofs_per_second: %.0f (median of %d runs, on-CPU; wall %.0f)", proofs, options.repeats, median(proofRates.map(\.wall))))
        print(String(format: "p256_verify_per_second: %.0f (raw P256.verify, same process; wall %.0f)", p256, median(p256Rates.map(\.wall))))
        if options.breakdown {
            print(String(format: "is_valid_public_key_per_second: %.0f", median(keyRates.map(\.cpu))))
            print(String(format: "proof_path_without_verify_per_second: %.0f", median(noVerifyRates.map(\.cpu))))
        }
        print(String(format: "ratio_in_process: %.3f (proofs ÷ raw P256.verify)", proofs / p256))
    }
}

struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

do { try run() } catch {
    FileHandle.standardError.write(Data("parley-bench-collab: \(error)\n".utf8))
    exit(ExitCode.failure.rawValue)
}
