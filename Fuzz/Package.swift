// swift-tools-version: 6.0
// libFuzzer targets for Parley's decoders, in a package of their own so the fuzzer's flags never touch the main
// build. Built and run by Scripts/fuzz (see docs/robustness.md, "Fuzzing"); the exact flags are the only ones this
// toolchain links with coverage: swift build -c debug --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address.
import PackageDescription

let package = Package(
    name: "ParleyFuzz",
    dependencies: [.package(name: "Parley", path: "..")],
    targets: [
        // SIP messages: libosip2's parse and Parley's validation after it.
        .executableTarget(name: "fuzz-sip-message", dependencies: [.product(name: "SIPMessages", package: "Parley")]),
        // SDP bodies and the offer/answer built from them (plain, SDES and DTLS answers checked by SDPFuzzChecks).
        .executableTarget(name: "fuzz-sdp", dependencies: ["SDPFuzzChecks", .product(name: "SIPMessages", package: "Parley")]),
        // The values of a=crypto, a=fingerprint and a=setup (issue 42), alone and inside an offer.
        .executableTarget(
            name: "fuzz-sdp-security", dependencies: ["SDPFuzzChecks", .product(name: "SIPMessages", package: "Parley")]),
        // The value of a=candidate (issue 43), alone and inside an offer with the other ICE attributes.
        .executableTarget(name: "fuzz-sdp-ice", dependencies: [.product(name: "SIPMessages", package: "Parley")]),
        // What every answer to an encrypted offer must satisfy, shared by the two SDP targets.
        .target(name: "SDPFuzzChecks", dependencies: [.product(name: "SIPMessages", package: "Parley")]),
        // Control API requests: JSON to typed commands.
        .executableTarget(name: "fuzz-control-request", dependencies: [.product(name: "ControlProtocol", package: "Parley")]),
        // WebSocket frames and the HTTP request heads of the WebSocket port (pages, upgrade).
        .executableTarget(name: "fuzz-websocket", dependencies: [.product(name: "ControlChannel", package: "Parley")]),
        // Digest challenges (WWW-Authenticate, Proxy-Authenticate) as a registrar or proxy could send them.
        .executableTarget(name: "fuzz-digest", dependencies: [.product(name: "SIPSignaling", package: "Parley")]),
        // The VoIP push channel: length-prefixed frames, then their JSON messages.
        .executableTarget(name: "fuzz-push", dependencies: [.product(name: "VoIPPush", package: "Parley")]),
        // A SIP proxy's push events (Kamailio evapi): netstrings, then their JSON.
        .executableTarget(name: "fuzz-proxy-event", dependencies: [.product(name: "VoIPPush", package: "Parley")]),
        // Contacts files, JSON or vCard.
        .executableTarget(name: "fuzz-contacts", dependencies: [.product(name: "ConversationKit", package: "Parley")]),
        // The engine as a whole, stateful: scripts of peer messages, replies, user actions and time passing (the
        // transaction, dialog and call-leg machines), checking that every transaction ends.
        .executableTarget(
            name: "fuzz-sip-engine",
            dependencies: [
                .product(name: "ParleyEngine", package: "Parley"), .product(name: "SIPTransport", package: "Parley"),
                .product(name: "SIPMessages", package: "Parley"), .product(name: "ConversationKit", package: "Parley"),
                .product(name: "ParleyTestSupport", package: "Parley"),
            ]),
        // The group messenger, stateful: bodies from peers, answers, failures, sends and time against a host.
        .executableTarget(name: "fuzz-group", dependencies: [.product(name: "GroupActivities", package: "Parley")]),
        // Collaborations: signed identity proofs as JSON against the verifier, and scripts of collaboration group
        // messages (challenges, proofs, replays, identity updates, time, members leaving) between two centers.
        .executableTarget(
            name: "fuzz-collab",
            dependencies: [
                .product(name: "Collaboration", package: "Parley"), .product(name: "GroupActivities", package: "Parley"),
                .product(name: "ParleyEngine", package: "Parley"), .product(name: "ParleyIO", package: "Parley"),
            ]),
        // Conformance scenario files.
        .executableTarget(
            name: "fuzz-scenario", dependencies: [.product(name: "ConversationConformance", package: "Parley")]),
    ],
    swiftLanguageModes: [.v6]
)
