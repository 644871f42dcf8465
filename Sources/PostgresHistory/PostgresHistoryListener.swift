import CallHistory
import Foundation
import Glibc
import Synchronization

/// A change to the shared history that a store announced (or anyone else: the trigger announces every write).
public struct HistoryNotification: Sendable, Hashable, Decodable {
    /// `inserted`, `read` or `deleted`.
    public let change: String
    /// The account whose rows changed.
    public let account: String
    /// The records that changed.
    public let records: [Int64]
    /// Their conversations, in the order of `records`.
    public let conversations: [UUID]
    /// The writer's session name (a store's ``PostgresCallHistory/source``).
    public let source: String
}

/// Listens on `parley_history` on a session of its own and hands every change for one account, made by anyone but
/// the given store, to a handler — so a parleyd emits `historyChanged` for records another instance wrote. Runs on a
/// thread of its own; when the server goes away it reconnects with back-off (1 s doubling to 30 s) and says so.
public final class PostgresHistoryListener: Sendable {
    private let stopped = StopFlag()

    /// Set once, read by the listening thread.
    private final class StopFlag: Sendable {
        let value = Atomic<Bool>(false)
    }

    /// Starts listening for `store`'s account; changes `store` made itself are not passed on. `log` hears about
    /// lost and regained sessions and unreadable payloads.
    public init(
        for store: PostgresCallHistory, log: @escaping @Sendable (String) -> Void,
        handler: @escaping @Sendable (HistoryNotification) -> Void
    ) throws(CallHistoryError) {
        let conninfo = store.conninfo
        let account = store.account
        let own = store.source
        let first = try Self.listen(conninfo)
        let stopped = self.stopped
        let worker = Thread {
            var connection: PostgresConnection? = first
            var backoff = 1.0
            while !stopped.value.load(ordering: .relaxed) {
                guard let session = connection else {
                    Thread.sleep(forTimeInterval: backoff)
                    do throws(CallHistoryError) {
                        connection = try Self.listen(conninfo)
                        log("history notifications: listening again on \(connection?.server ?? "the server")")
                        backoff = 1
                    } catch {
                        backoff = min(backoff * 2, 30)
                    }
                    continue
                }
                var poller = pollfd(fd: session.socket, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, 200) >= 0 || errno == EINTR else { continue }
                do throws(CallHistoryError) {
                    for (_, payload) in try session.notifications() {
                        guard let note = try? JSONDecoder().decode(HistoryNotification.self, from: Data(payload.utf8)) else {
                            log("history notifications: unreadable payload skipped: \(payload.prefix(200))")
                            continue
                        }
                        if note.account == account, note.source != own { handler(note) }
                    }
                } catch {
                    log("history notifications: \(error); reconnecting")
                    connection = nil
                }
            }
        }
        worker.name = "parley-history-listen"
        worker.start()
    }

    /// Stops the thread (within 200 ms) and closes its session.
    public func stop() { stopped.value.store(true, ordering: .relaxed) }

    deinit { stop() }

    private static func listen(_ conninfo: String) throws(CallHistoryError) -> PostgresConnection {
        let connection = try PostgresConnection(conninfo: conninfo, applicationName: "parley-listener")
        try connection.execute("LISTEN \(PostgresSchema.channel)")
        return connection
    }
}
