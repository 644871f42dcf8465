import CSystemd
import Glibc

/// A D-Bus interface a service exports: its name, methods and read-only properties (each property's changes are
/// announced with PropertiesChanged). sd-bus introspects it (`Introspect`), and answers `Get`/`GetAll` and the
/// ObjectManager's `GetManagedObjects` from the object's ``BusObject/property(_:of:)``.
public struct BusInterface: Sendable, Hashable {
    /// A method or property argument: a name for introspection and a D-Bus signature.
    public struct Argument: Sendable, Hashable {
        /// The name introspection shows.
        public let name: String
        /// A single complete type (`s`, `u`, `a(ss)`…).
        public let signature: String

        public init(_ name: String, _ signature: String) {
            self.name = name
            self.signature = signature
        }
    }

    /// A method: what it takes and what it gives.
    public struct Method: Sendable, Hashable {
        public let name: String
        public let inputs: [Argument]
        public let outputs: [Argument]

        public init(_ name: String, inputs: [Argument] = [], outputs: [Argument] = []) {
            self.name = name
            self.inputs = inputs
            self.outputs = outputs
        }
    }

    /// A read-only property: its name and type, as an argument has them.
    public typealias Property = Argument

    /// The interface's name (`org.parley.Parley.Call`).
    public let name: String
    public let methods: [Method]
    public let properties: [Property]

    public init(_ name: String, methods: [Method], properties: [Property] = []) {
        self.name = name
        self.methods = methods
        self.properties = properties
    }

    /// The method named `name`, if the interface has one.
    public func method(named name: String) -> Method? { methods.first { $0.name == name } }
}

/// An interface's sd-bus vtable: entries written by the C shim into memory allocated here, with every string they
/// point to, kept as long as the bus that exports it (sd-bus reads a vtable for as long as an object uses it).
// @unchecked Sendable: written once in `init`, read only by sd-bus on the bus's loop, freed in `deinit`.
final class BusVTable: @unchecked Sendable {
    let entries: UnsafeMutablePointer<sd_bus_vtable>
    private var strings: [UnsafeMutablePointer<CChar>] = []
    private var nameBlocks: [UnsafeMutableRawPointer] = []

    init(_ interface: BusInterface, method: parley_bus_method_handler, getter: parley_bus_property_getter) {
        let count = interface.methods.count + interface.properties.count + 2
        entries = UnsafeMutablePointer<sd_bus_vtable>.allocate(capacity: count)
        parley_bus_vtable_start(entries)
        var index = 1
        for each in interface.methods {
            let argumentNames = keep(names: each.inputs.map(\.name) + each.outputs.map(\.name))
            parley_bus_vtable_method(
                entries + index, keep(each.name), keep(each.inputs.map(\.signature).joined()),
                keep(each.outputs.map(\.signature).joined()), argumentNames, method)
            index += 1
        }
        for property in interface.properties {
            parley_bus_vtable_property(entries + index, keep(property.name), keep(property.signature), getter)
            index += 1
        }
        parley_bus_vtable_end(entries + index)
    }

    deinit {
        entries.deallocate()
        for string in strings { free(string) }
        for block in nameBlocks { block.deallocate() }
    }

    /// A C copy of `text`, freed with the vtable.
    private func keep(_ text: String) -> UnsafePointer<CChar> {
        let copy = strdup(text)!
        strings.append(copy)
        return UnsafePointer(copy)
    }

    /// `names`, each followed by a NUL, then one more NUL: sd-bus's list of argument names.
    private func keep(names: [String]) -> UnsafePointer<CChar> {
        let bytes: [UInt8] = names.flatMap { Array($0.utf8) + [0] } + [0]
        let block = UnsafeMutableRawPointer.allocate(byteCount: bytes.count, alignment: 1)
        block.copyMemory(from: bytes, byteCount: bytes.count)
        nameBlocks.append(block)
        return UnsafePointer(block.assumingMemoryBound(to: CChar.self))
    }
}
