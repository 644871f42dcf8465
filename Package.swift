// swift-tools-version: 6.0
// Parley — an open conversation (call) engine for Linux. See README.md.
import PackageDescription

let package = Package(
    name: "Parley",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ConversationKit", targets: ["ConversationKit"]),
        .library(name: "ConversationConformance", targets: ["ConversationConformance"]),
        .executable(name: "parley", targets: ["parley"]),
        .executable(name: "parley-bench-core", targets: ["parley-bench-core"]),
    ],
    targets: [
        // Pure LiveCommunicationKit-style model: no sockets, no SIP, no database.
        .target(name: "ConversationKit"),
        // Scenario files (JSON) and the runner that checks them against ConversationKit.
        .target(name: "ConversationConformance", dependencies: ["ConversationKit"]),
        // Hand-written argument parsing shared by the executables.
        .target(name: "CommandLineSupport"),
        .executableTarget(
            name: "parley",
            dependencies: ["ConversationKit", "ConversationConformance", "CommandLineSupport"]
        ),
        .executableTarget(
            name: "parley-bench-core",
            dependencies: ["ConversationKit", "CommandLineSupport"]
        ),
        .testTarget(name: "ConversationKitTests", dependencies: ["ConversationKit"]),
        .testTarget(
            name: "ConversationConformanceTests",
            dependencies: ["ConversationConformance", "ConversationKit"],
            resources: []
        ),
        .testTarget(name: "ParleyCLITests", dependencies: ["parley", "CommandLineSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
