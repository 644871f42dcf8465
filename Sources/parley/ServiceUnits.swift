/// The files `parley install-service` writes, and packages install (`packaging/`): parleyd's systemd user service,
/// its control socket (socket activation) and its D-Bus activation file, each naming the parleyd they run.
enum ServiceUnits {
    /// The service unit's file name.
    static let serviceName = "parleyd.service"
    /// The socket unit's file name.
    static let socketName = "parleyd.socket"
    /// The D-Bus activation file's name.
    static let dbusName = "org.parley.Parley.service"

    /// `parleyd.service`, running `parleyd` (a path).
    static func service(parleyd: String) -> String {
        """
        # parleyd as a systemd user service (docs/desktop.md): `parley install-service`, or a package's copy in
        # /usr/lib/systemd/user/ and `systemctl --user enable --now parleyd`. It reads %E/parley/parleyd.conf when that
        # exists, keeps its history in $XDG_DATA_HOME/parley, and its control socket and token in %t/parley (the socket
        # passed by parleyd.socket when that is enabled). It tells systemd it is ready once its listeners and control
        # socket are up (Type=notify), and feeds the watchdog from its SIP loop: a loop that stops turning is restarted.
        [Unit]
        Description=Parley SIP phone daemon

        [Service]
        Type=notify
        NotifyAccess=main
        ExecStart=\(systemdQuoted(parleyd))
        RuntimeDirectory=parley
        RuntimeDirectoryMode=0700
        RuntimeDirectoryPreserve=yes
        WatchdogSec=30
        Restart=on-failure
        RestartSec=2
        Environment=PULSE_PROP=media.role=phone

        [Install]
        WantedBy=default.target

        """
    }

    /// `parleyd.socket`: the control socket, made by systemd and passed to parleyd as "control".
    static let socket = """
        # parleyd's control socket, made by systemd and passed to parleyd.service (socket activation, docs/desktop.md):
        # the first `parley` command to connect starts parleyd if it is not running, and the socket outlives restarts.
        [Unit]
        Description=Parley control socket

        [Socket]
        ListenStream=%t/parley/control.sock
        SocketMode=0600
        DirectoryMode=0700
        FileDescriptorName=control

        [Install]
        WantedBy=sockets.target

        """

    /// `org.parley.Parley.service`: the session bus starts parleyd for a call to org.parley.Parley (through
    /// systemd's parleyd.service where the bus is systemd's, else by running `parleyd` itself).
    static func dbus(parleyd: String) -> String {
        """
        # D-Bus activation (docs/desktop.md): a call to org.parley.Parley on the session bus starts parleyd, through
        # systemd's parleyd.service where the bus is systemd's, else by running Exec= itself.
        [D-BUS Service]
        Name=org.parley.Parley
        Exec=\(dbusQuoted(parleyd))
        SystemdService=parleyd.service

        """
    }

    /// A path as systemd's ExecStart= takes it: `%` doubled, in double quotes (`\` and `"` escaped) when it holds
    /// spaces or quotes.
    static func systemdQuoted(_ path: String) -> String {
        let escaped = path.replacingOccurrences(of: "%", with: "%%")
        guard escaped.contains(where: { " \t\"'\\".contains($0) }) else { return escaped }
        return "\"" + escaped.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    /// A path as a D-Bus service file's Exec= takes it (shell-like words): single-quoted when it holds anything a
    /// shell would split or interpret.
    static func dbusQuoted(_ path: String) -> String {
        guard path.contains(where: { " \t\"'\\$`".contains($0) }) else { return path }
        return "'" + path.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
