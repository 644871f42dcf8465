#!/usr/bin/env python3
"""A notification server for tests (org.freedesktop.Notifications on the bus at argv[1]), as a desktop's would be.

It prints one line per event, flushed, for the test to read:
  READY                         the name is ours
  NOTIFY <id> <json>            a Notify call: app, summary, body, actions, hints (urgency, category, resident…), timeout
  CLOSE <id>                    a CloseNotification call
It answers Notify at once (mode "normal"), after argv[2]="slow=SECONDS", or never ("never"). The test plays the user
through org.parley.Test.Notifications.Invoke(u id, s key) on the same object: it emits ActionInvoked(id, key), then
NotificationClosed(id, 2) unless the notification is resident, as servers do.
"""
import json
import signal
import sys

from gi.repository import Gio, GLib

INTERFACES = """
<node>
  <interface name="org.freedesktop.Notifications">
    <method name="Notify">
      <arg type="s" direction="in"/><arg type="u" direction="in"/><arg type="s" direction="in"/>
      <arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="as" direction="in"/>
      <arg type="a{sv}" direction="in"/><arg type="i" direction="in"/><arg type="u" direction="out"/>
    </method>
    <method name="CloseNotification"><arg type="u" direction="in"/></method>
    <method name="GetCapabilities"><arg type="as" direction="out"/></method>
    <method name="GetServerInformation">
      <arg type="s" direction="out"/><arg type="s" direction="out"/><arg type="s" direction="out"/><arg type="s" direction="out"/>
    </method>
    <signal name="ActionInvoked"><arg type="u"/><arg type="s"/></signal>
    <signal name="NotificationClosed"><arg type="u"/><arg type="u"/></signal>
  </interface>
  <interface name="org.parley.Test.Notifications">
    <method name="Invoke"><arg type="u" direction="in"/><arg type="s" direction="in"/></method>
  </interface>
</node>
"""
PATH = "/org/freedesktop/Notifications"
NAME = "org.freedesktop.Notifications"

mode = sys.argv[2] if len(sys.argv) > 2 else "normal"
shown = {}
next_id = [1]


def say(line):
    print(line, flush=True)


def plain(value):
    return value if isinstance(value, (str, int, float, bool)) else str(value)


def on_call(connection, sender, path, interface, method, parameters, invocation):
    if method == "Notify":
        app, replaces, icon, summary, body, actions, hints, timeout = parameters.unpack()
        number = replaces or next_id[0]
        next_id[0] += 1
        shown[number] = bool(hints.get("resident", False))
        say("NOTIFY %d %s" % (number, json.dumps({
            "app": app, "icon": icon, "summary": summary, "body": body, "actions": actions,
            "hints": {key: plain(value) for key, value in hints.items()}, "timeout": timeout})))
        reply = GLib.Variant("(u)", (number,))
        if mode == "never":
            pending.append(invocation)  # kept, never answered
        elif mode.startswith("slow="):
            GLib.timeout_add(int(float(mode[5:]) * 1000), lambda: invocation.return_value(reply) and False)
        else:
            invocation.return_value(reply)
    elif method == "CloseNotification":
        (number,) = parameters.unpack()
        say("CLOSE %d" % number)
        if shown.pop(number, None) is not None:
            connection.emit_signal(None, PATH, NAME, "NotificationClosed", GLib.Variant("(uu)", (number, 3)))
        invocation.return_value(None)
    elif method == "GetCapabilities":
        invocation.return_value(GLib.Variant("(as)", (["actions", "body", "persistence"],)))
    elif method == "GetServerInformation":
        invocation.return_value(GLib.Variant("(ssss)", ("test-notifications", "parley", "1", "1.2")))
    elif method == "Invoke":
        number, key = parameters.unpack()
        connection.emit_signal(None, PATH, NAME, "ActionInvoked", GLib.Variant("(us)", (number, key)))
        if shown.get(number) is False:
            del shown[number]
            connection.emit_signal(None, PATH, NAME, "NotificationClosed", GLib.Variant("(uu)", (number, 2)))
        say("INVOKED %d %s" % (number, key))
        invocation.return_value(None)


# The test's threads block SIGTERM and pass the mask on: clear it, so the test can stop this server by its PID.
signal.pthread_sigmask(signal.SIG_SETMASK, [])
pending = []
flags = Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION
bus = Gio.DBusConnection.new_for_address_sync(sys.argv[1], flags, None, None)
info = Gio.DBusNodeInfo.new_for_xml(INTERFACES)
for interface in info.interfaces:
    bus.register_object(PATH, interface, on_call, None, None)
Gio.bus_own_name_on_connection(bus, NAME, Gio.BusNameOwnerFlags.NONE, lambda *_: say("READY"), lambda *_: sys.exit(3))
GLib.MainLoop().run()
