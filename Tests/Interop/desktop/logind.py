#!/usr/bin/env python3
"""A stand-in for logind on a test's bus (argv[1], given to parleyd as DBUS_SYSTEM_BUS_ADDRESS): the part of
org.freedesktop.login1.Manager parleyd uses. It prints one line per event, flushed:
  READY                              the name is ours
  INHIBIT <n> <what>|<who>|<why>|<mode>  an Inhibit call, answered with the write end of pipe n
  RELEASED <n>                       pipe n's last writer closed: the lock is released
The test plays the machine through org.parley.Test.Login.Sleep(b start): PrepareForSleep(start) is emitted.
"""
import os
import signal
import sys

from gi.repository import Gio, GLib

INTERFACES = """
<node>
  <interface name="org.freedesktop.login1.Manager">
    <method name="Inhibit">
      <arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="s" direction="in"/>
      <arg type="s" direction="in"/><arg type="h" direction="out"/>
    </method>
    <signal name="PrepareForSleep"><arg type="b"/></signal>
  </interface>
  <interface name="org.parley.Test.Login">
    <method name="Sleep"><arg type="b" direction="in"/></method>
  </interface>
</node>
"""
PATH = "/org/freedesktop/login1"
locks = [0]


def say(line):
    print(line, flush=True)


def released(number):
    def watch(fd, condition):
        say("RELEASED %d" % number)
        os.close(fd)
        return False
    return watch


def on_call(connection, sender, path, interface, method, parameters, invocation):
    if method == "Inhibit":
        what, who, why, mode = parameters.unpack()
        locks[0] += 1
        read, write = os.pipe()
        GLib.unix_fd_add_full(GLib.PRIORITY_DEFAULT, read, GLib.IOCondition.HUP | GLib.IOCondition.IN, released(locks[0]))
        say("INHIBIT %d %s|%s|%s|%s" % (locks[0], what, who, why, mode))
        fds = Gio.UnixFDList.new_from_array([write])  # takes the write end: only parleyd's copy stays open
        invocation.return_value_with_unix_fd_list(GLib.Variant("(h)", (0,)), fds)
    elif method == "Sleep":
        (start,) = parameters.unpack()
        connection.emit_signal(None, PATH, "org.freedesktop.login1.Manager", "PrepareForSleep", GLib.Variant("(b)", (start,)))
        say("SLEEP %s" % start)
        invocation.return_value(None)


# The test's threads block SIGTERM and pass the mask on: clear it, so the test can stop this by its PID.
signal.pthread_sigmask(signal.SIG_SETMASK, [])
flags = Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION
bus = Gio.DBusConnection.new_for_address_sync(sys.argv[1], flags, None, None)
info = Gio.DBusNodeInfo.new_for_xml(INTERFACES)
for interface in info.interfaces:
    bus.register_object(PATH, interface, on_call, None, None)
Gio.bus_own_name_on_connection(bus, "org.freedesktop.login1", Gio.BusNameOwnerFlags.NONE, lambda *_: say("READY"), lambda *_: sys.exit(3))
GLib.MainLoop().run()
