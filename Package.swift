// swift-tools-version: 6.0
// Parley — an open conversation (call) engine for Linux. See README.md.
import PackageDescription

let package = Package(
    name: "Parley",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ConversationKit", targets: ["ConversationKit"]),
        .library(name: "ConversationConformance", targets: ["ConversationConformance"]),
        .library(name: "CallHistory", targets: ["CallHistory"]),
        .library(name: "SIPMessages", targets: ["SIPMessages"]),
        .library(name: "SIPSignaling", targets: ["SIPSignaling"]),
        .library(name: "SIPTransport", targets: ["SIPTransport"]),
        .library(name: "ParleyEngine", targets: ["ParleyEngine"]),
        .library(name: "VoIPPush", targets: ["VoIPPush"]),
        .library(name: "ControlChannel", targets: ["ControlChannel"]),
        .executable(name: "parley", targets: ["parley"]),
        .executable(name: "parleyd", targets: ["parleyd"]),
        .executable(name: "parley-bench-core", targets: ["parley-bench-core"]),
        .executable(name: "parley-bench-history", targets: ["parley-bench-history"]),
    ],
    targets: [
        // Pure LiveCommunicationKit-style model: no sockets, no SIP, no database.
        .target(name: "ConversationKit"),
        // Scenario files (JSON) and the runner that checks them against ConversationKit.
        .target(name: "ConversationConformance", dependencies: ["ConversationKit"]),
        // SQLite from Debian (libsqlite3-dev); imported only by CallHistory.
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // The durable, queryable record of ended conversations.
        .target(name: "CallHistory", dependencies: ["ConversationKit", "CSQLite"]),
        // libosip2 from Debian (libosip2-dev); imported only by SIPMessages.
        .systemLibrary(name: "COSIP", pkgConfig: "libosip2", providers: [.apt(["libosip2-dev"])]),
        // SIP requests, responses, URIs, headers and SDP as validated Swift values.
        .target(name: "SIPMessages", dependencies: ["COSIP"]),
        // RFC 3261 transactions as pure state machines that return effects: no sockets, no clocks.
        .target(name: "SIPSignaling", dependencies: ["SIPMessages"]),
        // OpenSSL 3 from Debian (libssl-dev); imported only by SIPTransport.
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        // Linux epoll, eventfd and prctl headers (glibc, nothing to link); imported only by SIPTransport.
        .systemLibrary(name: "CLinux"),
        // UDP, TCP and TLS on one epoll event loop; stream framing by Content-Length; digests and random tokens.
        .target(name: "SIPTransport", dependencies: ["CLinux", "COpenSSL"]),
        // Where SIP meets the conversation lifecycle: the user agent, its transaction driver, history recording.
        .target(
            name: "ParleyEngine",
            dependencies: ["ConversationKit", "SIPMessages", "SIPSignaling", "SIPTransport", "CallHistory", "ControlProtocol"]
        ),
        // The VoIP push channel: wire protocol, the simulator's rules (pure), the simulator's sockets, the device client.
        .target(name: "VoIPPush", dependencies: ["ConversationKit"]),
        // The control protocol between frontends and parleyd: messages, errors, the method table.
        .target(name: "ControlProtocol", dependencies: ["ConversationKit"]),
        // The control API's transport: newline-delimited JSON over a Unix socket, the same over WebSocket on loopback
        // TCP (RFC 6455, Origin allow-list), token hello, bounded queues.
        .target(name: "ControlChannel", dependencies: ["SIPTransport"]),
        // Hand-written argument parsing shared by the executables.
        .target(name: "CommandLineSupport"),
        .executableTarget(
            name: "parley",
            dependencies: [
                "ConversationKit", "ConversationConformance", "CallHistory", "CommandLineSupport", "VoIPPush",
                "ControlChannel", "ControlProtocol",
            ]
        ),
        .executableTarget(
            name: "parleyd",
            dependencies: [
                "ParleyEngine", "ConversationKit", "CallHistory", "SIPMessages", "SIPSignaling", "SIPTransport",
                "CommandLineSupport", "VoIPPush", "ControlChannel", "ControlProtocol",
            ]
        ),
        .executableTarget(
            name: "parley-bench-engine",
            dependencies: ["ParleyEngine", "ConversationKit", "SIPTransport"]
        ),
        .executableTarget(
            name: "parley-bench-push",
            dependencies: ["ParleyEngine", "ConversationKit", "SIPTransport", "VoIPPush"]
        ),
        .executableTarget(
            name: "parley-bench-core",
            dependencies: ["ConversationKit", "CommandLineSupport"]
        ),
        .executableTarget(
            name: "parley-bench-history",
            dependencies: ["CallHistory", "ConversationKit"]
        ),
        .testTarget(name: "ConversationKitTests", dependencies: ["ConversationKit"]),
        .testTarget(name: "SIPMessagesTests", dependencies: ["SIPMessages"]),
        .testTarget(name: "SIPSignalingTests", dependencies: ["SIPSignaling", "SIPMessages"]),
        .testTarget(name: "SIPTransportTests", dependencies: ["SIPTransport"]),
        .testTarget(
            name: "ParleyEngineTests",
            dependencies: ["ParleyEngine", "ConversationKit", "SIPMessages", "SIPTransport", "CallHistory", "ControlProtocol"]
        ),
        // Real peers (sipp, baresip) against the built parleyd on loopback.
        .testTarget(name: "InteropTests", dependencies: ["parleyd", "parley", "ControlChannel", "ControlProtocol"]),
        .testTarget(name: "VoIPPushTests", dependencies: ["VoIPPush", "ConversationKit"]),
        .testTarget(name: "ControlChannelTests", dependencies: ["ControlChannel", "SIPTransport"]),
        .testTarget(name: "CallHistoryTests", dependencies: ["CallHistory", "ConversationKit"]),
        .testTarget(
            name: "ConversationConformanceTests",
            dependencies: ["ConversationConformance", "ConversationKit"],
            resources: []
        ),
        .testTarget(
            name: "ParleyCLITests", dependencies: ["parley", "CommandLineSupport", "CallHistory", "ConversationKit", "VoIPPush"]),
    ],
    swiftLanguageModes: [.v6]
)
