import Foundation
import Glibc
import SystemdSupport

extension ParleyNode {
    /// The control socket a service manager passed (socket activation, docs/desktop.md): the listening Unix socket
    /// named `control` (a `.socket` unit's `FileDescriptorName=control`, or the name systemd-socket-activate gives it),
    /// when the configuration takes one; nil when none was passed. Every other passed socket is closed, with a log
    /// line. A `control` socket that is not a listening Unix stream socket with a path is an error.
    static func passedControlSocket(_ configuration: NodeConfiguration) throws -> (descriptor: Int32, path: String)? {
        guard configuration.takesPassedControlSocket else { return nil }
        var control: (descriptor: Int32, path: String)?
        for socket in PassedSockets.take() {
            if socket.name == "control", control == nil {
                guard let path = socket.unixPath else {
                    close(socket.descriptor)
                    throw NodeError(
                        "the socket the service manager passed as \"control\" is not a listening Unix stream socket with a path")
                }
                control = (socket.descriptor, path)
            } else {
                configuration.log.warning(
                    "the service manager passed a socket named \"\(socket.name)\": parleyd takes only one named \"control\"; closed")
                close(socket.descriptor)
            }
        }
        return control
    }

    /// Without a control API (`--no-control`), the sockets a service manager passed are closed, with a log line.
    static func closePassedSockets(_ configuration: NodeConfiguration) {
        guard configuration.takesPassedControlSocket else { return }
        for socket in PassedSockets.take() {
            configuration.log.warning(
                "the service manager passed a socket named \"\(socket.name)\", but this parleyd has no control API (--no-control): closed")
            close(socket.descriptor)
        }
    }
}
