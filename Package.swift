// swift-tools-version: 6.0
// Parley — an open conversation (call) engine for Linux. See README.md.
import PackageDescription

let package = Package(
    name: "Parley",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ConversationKit", targets: ["ConversationKit"]),
        .library(name: "GroupActivities", targets: ["GroupActivities"]),
        .library(name: "Collaboration", targets: ["Collaboration"]),
        .library(name: "ConversationConformance", targets: ["ConversationConformance"]),
        .library(name: "CallHistory", targets: ["CallHistory"]),
        .library(name: "PostgresHistory", targets: ["PostgresHistory"]),
        .library(name: "SIPMessages", targets: ["SIPMessages"]),
        .library(name: "SIPSignaling", targets: ["SIPSignaling"]),
        .library(name: "ParleyIO", targets: ["ParleyIO"]),
        .library(name: "SIPTransport", targets: ["SIPTransport"]),
        .library(name: "DNSResolver", targets: ["DNSResolver"]),
        .library(name: "ParleyEngine", targets: ["ParleyEngine"]),
        .library(name: "VoIPPush", targets: ["VoIPPush"]),
        .library(name: "ControlChannel", targets: ["ControlChannel"]),
        .library(name: "ControlProtocol", targets: ["ControlProtocol"]),
        .library(name: "ParleyControl", targets: ["ParleyControl"]),
        .library(name: "ParleyNode", targets: ["ParleyNode"]),
        .library(name: "Media", targets: ["Media"]),
        // Test doubles shared by the test targets and the fuzz package (Fuzz/).
        .library(name: "ParleyTestSupport", targets: ["ParleyTestSupport"]),
        .executable(name: "parley", targets: ["parley"]),
        .executable(name: "parleyd", targets: ["parleyd"]),
        .executable(name: "parley-bench-core", targets: ["parley-bench-core"]),
        .executable(name: "parley-bench-history", targets: ["parley-bench-history"]),
        .executable(name: "parley-bench-gate", targets: ["parley-bench-gate"]),
    ],
    targets: [
        // Pure LiveCommunicationKit-style model: no sockets, no SIP, no database.
        .target(name: "ConversationKit"),
        // Group sessions and their messenger (Apple's GroupActivities) as one pure machine: no sockets, no SIP.
        .target(name: "GroupActivities"),
        // Collaborations bound to a conversation (Apple's SharedWithYou): metadata, actions, Merkle-root identities,
        // proofs, nonces and notices, as one pure machine; the cryptography is injected.
        .target(name: "Collaboration", dependencies: ["GroupActivities"]),
        // Scenario files (JSON) and the runner that checks them against ConversationKit.
        .target(name: "ConversationConformance", dependencies: ["ConversationKit"]),
        // SQLite from Debian (libsqlite3-dev); imported only by CallHistory.
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // The durable, queryable record of ended conversations.
        .target(name: "CallHistory", dependencies: ["ConversationKit", "CSQLite"]),
        // libpq from Debian (libpq-dev); imported only by PostgresHistory.
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        // The call history in a PostgreSQL database many parleyd share, behind the same CallHistoryStore protocol.
        .target(name: "PostgresHistory", dependencies: ["CallHistory", "ConversationKit", "CLibPQ"]),
        // libosip2 from Debian (libosip2-dev); imported only by SIPMessages.
        .systemLibrary(name: "COSIP", pkgConfig: "libosip2", providers: [.apt(["libosip2-dev"])]),
        // SIP requests, responses, URIs, headers and SDP as validated Swift values.
        .target(name: "SIPMessages", dependencies: ["COSIP"]),
        // RFC 3261 transactions as pure state machines that return effects: no sockets, no clocks.
        .target(name: "SIPSignaling", dependencies: ["SIPMessages"]),
        // OpenSSL 3 from Debian (libssl-dev); imported only by ParleyIO.
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        // Linux epoll, eventfd and prctl headers (glibc, nothing to link); imported only by ParleyIO.
        .systemLibrary(name: "CLinux"),
        // Everything byte-level, once: the epoll loop and its timers, bounded byte queues, stream channels generic
        // over a framing codec, stream servers, sockets, TLS, digests and secure random.
        .target(name: "ParleyIO", dependencies: ["CLinux", "COpenSSL"]),
        // SIP over UDP, TCP and TLS on ParleyIO; stream framing by Content-Length.
        .target(name: "SIPTransport", dependencies: ["ParleyIO"]),
        // c-ares from Debian (libc-ares-dev); imported only by DNSResolver.
        .systemLibrary(name: "CAres", pkgConfig: "libcares", providers: [.apt(["libc-ares-dev"])]),
        // RFC 3263 server location (NAPTR, SRV, A/AAAA) as a pure procedure, and c-ares driven by ParleyIO's loop.
        .target(name: "DNSResolver", dependencies: ["CAres", "ParleyIO"]),
        // GStreamer from Debian (libgstreamer1.0-dev, with GIO for sockets); imported only by Media.
        .systemLibrary(
            name: "CGStreamer", pkgConfig: "gstreamer-1.0",
            providers: [.apt(["libgstreamer1.0-dev", "libgstreamer-plugins-base1.0-dev", "libgstreamer-plugins-bad1.0-dev"])]),
        // libsystemd from Debian (libsystemd-dev); imported only by SystemdSupport.
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        // The systemd service manager's protocol (sd_notify: readiness, watchdog, stopping), and sd-bus on a loop.
        .target(name: "SystemdSupport", dependencies: ["CSystemd", "ParleyIO"]),
        // libnice from Debian (libnice-dev); imported only by ICE.
        .systemLibrary(name: "CNice", pkgConfig: "nice", providers: [.apt(["libnice-dev"])]),
        // ICE (RFC 8445) agents on libnice: one per call, their GLib context iterated by one thread of their own.
        .target(name: "ICE", dependencies: ["CNice"]),
        // Call audio: one GStreamer pipeline per media session (rtpbin, jitter buffer, RTCP), RTP port pairs.
        .target(name: "Media", dependencies: ["CGStreamer", "ParleyIO", "ICE"]),
        // Where SIP meets the conversation lifecycle: the user agent, its transaction driver, history recording.
        .target(
            name: "ParleyEngine",
            dependencies: [
                "ConversationKit", "SIPMessages", "SIPSignaling", "SIPTransport", "ParleyIO", "CallHistory", "GroupActivities",
                "Collaboration",
            ]
        ),
        // The control protocol served against a running engine, and parleyd's control endpoints (Unix socket, WebSocket).
        .target(
            name: "ParleyControl",
            dependencies: [
                "ParleyEngine", "ControlProtocol", "ControlChannel", "ParleyIO", "ConversationKit", "CallHistory", "GroupActivities",
                "Collaboration",
            ]),
        // The VoIP push channel: wire protocol, the simulator's rules (pure), the simulator's sockets, the device client.
        .target(name: "VoIPPush", dependencies: ["ConversationKit", "ParleyIO"]),
        // The control protocol between frontends and parleyd: messages, errors, the method table.
        .target(name: "ControlProtocol", dependencies: ["ConversationKit", "GroupActivities", "Collaboration"]),
        // The control API's transport: newline-delimited JSON over a Unix socket, the same over WebSocket on loopback
        // TCP (RFC 6455, Origin allow-list), token hello, bounded queues.
        .target(name: "ControlChannel", dependencies: ["ParleyIO"]),
        // The web softphone parleyd serves on its WebSocket port: HTML, CSS and ES modules embedded in the binary.
        .target(name: "WebSoftphone", dependencies: ["ControlChannel"], resources: [.embedInCode("Site")]),
        // One Parley endpoint built from one configuration: loop, transports, engine, history, push client, control.
        .target(
            name: "ParleyNode",
            dependencies: [
                "ParleyControl", "ParleyEngine", "ParleyIO", "SIPTransport", "ConversationKit", "CallHistory", "VoIPPush",
                "ControlChannel", "ControlProtocol", "WebSoftphone", "Media", "SIPMessages", "Collaboration", "PostgresHistory",
                "DNSResolver", "ICE", "SystemdSupport", "ParleyDBus",
            ]
        ),
        // parleyd on the session D-Bus: org.parley.Parley, Dial and Recents, one object per live call.
        .target(
            name: "ParleyDBus", dependencies: ["SystemdSupport", "ParleyEngine", "ConversationKit", "CallHistory", "ParleyIO"]),
        // Hand-written argument parsing shared by the executables.
        .target(name: "CommandLineSupport"),
        .executableTarget(
            name: "parley",
            dependencies: [
                "ConversationKit", "ConversationConformance", "CallHistory", "CommandLineSupport", "VoIPPush",
                "ControlChannel", "ControlProtocol", "ParleyIO", "ParleyEngine", "ParleyNode", "ParleyControl", "GroupActivities",
                "Collaboration", "PostgresHistory",
            ]
        ),
        .executableTarget(
            name: "parleyd",
            dependencies: [
                "ParleyNode", "ParleyEngine", "ConversationKit", "SIPMessages", "SIPSignaling", "SIPTransport", "ParleyIO",
                "CommandLineSupport", "VoIPPush", "Media", "ICE",
            ],
            // jemalloc as the daemon's malloc: the parse thread allocates what the SIP loop frees, a hand-over that
            // glibc's per-thread arenas serve poorly (docs/architecture.md, "Threads").
            linkerSettings: [.linkedLibrary("jemalloc", .when(platforms: [.linux]))]
        ),
        .executableTarget(
            name: "parley-bench-engine",
            dependencies: ["ParleyEngine", "ConversationKit", "SIPTransport", "ParleyIO"]
        ),
        .executableTarget(
            name: "parley-bench-register",
            dependencies: ["ParleyEngine", "SIPMessages", "SIPSignaling", "SIPTransport", "ParleyIO", "CommandLineSupport"]
        ),
        .executableTarget(
            name: "parley-bench-push",
            dependencies: ["ParleyNode", "ParleyEngine", "ConversationKit", "SIPTransport", "VoIPPush"]
        ),
        .executableTarget(
            name: "parley-bench-core",
            dependencies: ["ConversationKit", "CommandLineSupport"]
        ),
        // Proofs verified per second (walk, ECDSA verify, nonce bookkeeping) for Scripts/bench-collab.
        .executableTarget(
            name: "parley-bench-collab",
            dependencies: ["Collaboration", "ParleyEngine", "ParleyIO", "CommandLineSupport"]
        ),
        .executableTarget(
            name: "parley-bench-history",
            dependencies: ["CallHistory", "PostgresHistory", "ConversationKit"]
        ),
        // The receive gate's cost per packet for Scripts/bench-media.
        .executableTarget(name: "parley-bench-gate", dependencies: ["Media"]),
        // What test targets share: recorders that wait on events, a hand-driven WebSocket client.
        .target(name: "ParleyTestSupport", dependencies: ["ControlChannel", "ParleyEngine", "SIPMessages", "SIPTransport"]),
        .testTarget(name: "ConversationKitTests", dependencies: ["ConversationKit"]),
        .testTarget(name: "GroupActivitiesTests", dependencies: ["GroupActivities"]),
        .testTarget(
            name: "CollaborationTests", dependencies: ["Collaboration", "GroupActivities", "ParleyIO", "ParleyEngine"],
            resources: [.copy("Vectors")]),
        .testTarget(name: "SIPMessagesTests", dependencies: ["SIPMessages"]),
        .testTarget(name: "SIPSignalingTests", dependencies: ["SIPSignaling", "SIPMessages"]),
        .testTarget(name: "ParleyIOTests", dependencies: ["ParleyIO", "ParleyTestSupport"]),
        // The RFC 3263 procedure (pure), and the resolver against dnsmasq and misbehaving servers on loopback.
        .testTarget(name: "DNSResolverTests", dependencies: ["DNSResolver", "ParleyIO", "ParleyTestSupport"]),
        .testTarget(name: "SIPTransportTests", dependencies: ["SIPTransport", "ParleyIO", "ParleyTestSupport"]),
        .testTarget(
            name: "ParleyEngineTests",
            dependencies: [
                "ParleyEngine", "ParleyControl", "ConversationKit", "SIPMessages", "SIPTransport", "ParleyIO", "CallHistory",
                "ControlProtocol", "ControlChannel", "ParleyTestSupport", "GroupActivities",
            ]
        ),
        // Real peers (sipp, baresip) against the built parleyd on loopback.
        .testTarget(
            name: "InteropTests",
            dependencies: [
                "parleyd", "parley", "ControlChannel", "ControlProtocol", "ParleyTestSupport", "GroupActivities", "Collaboration",
                "ParleyEngine", "ParleyIO", "ParleyNode",
            ]),
        .testTarget(name: "ParleyDBusTests", dependencies: ["ParleyDBus", "SystemdSupport", "ConversationKit"]),
        .testTarget(name: "VoIPPushTests", dependencies: ["VoIPPush", "ConversationKit", "ParleyIO", "ParleyTestSupport"]),
        .testTarget(name: "ControlChannelTests", dependencies: ["ControlChannel", "ParleyIO", "ParleyTestSupport"]),
        .testTarget(name: "CallHistoryTests", dependencies: ["CallHistory", "PostgresHistory", "ConversationKit"]),
        .testTarget(name: "MediaTests", dependencies: ["Media", "ICE", "ParleyIO", "ParleyTestSupport"]),
        .testTarget(
            name: "ControlProtocolTests", dependencies: ["ControlProtocol", "ConversationKit", "GroupActivities", "Collaboration", "CallHistory"]),
        .testTarget(
            name: "ConversationConformanceTests",
            dependencies: ["ConversationConformance", "ConversationKit"],
            resources: []
        ),
        .testTarget(
            name: "ParleyCLITests", dependencies: ["parley", "parleyd", "CommandLineSupport", "CallHistory", "ConversationKit", "VoIPPush"]),
    ],
    swiftLanguageModes: [.v6]
)
