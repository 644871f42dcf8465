import Foundation
import Synchronization

/// The contact directory a running node names people from, replaceable while it runs (SIGHUP, `reloadContacts`):
/// readers always see one whole directory, the old one or the new.
public final class ContactBook: Sendable {
    private let directory: Mutex<ContactDirectory?>
    private let source: (@Sendable () throws -> ContactDirectory)?

    /// A book holding `directory`; `source` reads it again (nil: nothing to reload from).
    public init(_ directory: ContactDirectory?, source: (@Sendable () throws -> ContactDirectory)? = nil) {
        self.directory = Mutex(directory)
        self.source = source
    }

    /// The directory now, if any.
    public var current: ContactDirectory? { directory.withLock { $0 } }

    /// Whether there is a file to reload from.
    public var isReloadable: Bool { source != nil }

    /// The name of the contact matching `handle`, or nil.
    public func contactName(for handle: Handle) -> String? {
        directory.withLock { $0?.contact(for: handle)?.name }
    }

    /// Reads the source again and swaps the directory in; on error the old one stays and the error is thrown.
    @discardableResult
    public func reload() throws -> ContactDirectory {
        guard let source else { throw ContactBookError.nothingToReload }
        let fresh = try source()
        directory.withLock { $0 = fresh }
        return fresh
    }
}

/// Why a ``ContactBook`` cannot reload.
public enum ContactBookError: Error, Sendable, CustomStringConvertible {
    /// It was made without a source (no contacts file).
    case nothingToReload

    /// In words.
    public var description: String { "no contacts file was given (--contacts FILE)" }
}
