import Glibc

/// A system call of the I/O layer failed: which one (with what it was doing), and errno.
public struct IOError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was being done: `epoll_create1`, `bind 127.0.0.1:5070`, `connect [::1]:5070`.
    public var operation: String
    /// The errno it failed with.
    public var code: Int32

    /// A failure of `operation` with errno `code`.
    public init(_ operation: String, code: Int32) {
        self.operation = operation
        self.code = code
    }

    /// `bind 127.0.0.1:5070: Address already in use`.
    public var description: String { "\(operation): \(Self.text(code))" }

    /// strerror's text for `code`.
    public static func text(_ code: Int32) -> String {
        guard let text = strerror(code) else { return "errno \(code)" }
        return String(cString: text)
    }
}
