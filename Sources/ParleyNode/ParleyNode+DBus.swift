import CallHistory
import ConversationKit
import ParleyDBus
import ParleyEngine
import ParleyIO

extension ParleyNode {
    /// The session D-Bus service on `loop` (the control API's when there is one: Recents may wait on the history),
    /// when the configuration asks for it and a session bus is reachable; otherwise nil, said in one line.
    static func dbusService(
        _ configuration: NodeConfiguration, _ engine: ParleyEngine, _ history: (any CallHistoryStore)?,
        _ contacts: ContactBook, on loop: EventLoop
    ) -> ParleyDBusService? {
        guard configuration.dbus else { return nil }
        guard ParleyDBusService.sessionBusReachable else {
            configuration.log.info("D-Bus: no session bus (DBUS_SESSION_BUS_ADDRESS is not set); not served")
            return nil
        }
        return ParleyDBusService(engine: engine, history: history, contacts: contacts, loop: loop, log: configuration.log)
    }
}
