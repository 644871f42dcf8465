/// A value kept once on the heap and shared by every copy of its holder until one of them changes it (copy on write,
/// as `Array` does). Copying the holder then costs one reference count, where a struct of strings and arrays costs
/// one per field: a call copies its URIs and addresses dozens of times (transactions, dialogs, legs), and those
/// reference counts were a large share of parleyd's CPU.
///
/// `Sendable` like `Array`: the box is written only through `value`'s modify accessor, which first makes it unique.
struct SharedValue<Value: Hashable & Sendable>: Hashable, Sendable {
    // @unchecked Sendable: `value` is a Sendable value, written only through `SharedValue.value`'s modify accessor on a
    // box that no other holder shares (it is copied first otherwise), so no two threads ever reach one box's value
    // while one of them writes it.
    private final class Box: @unchecked Sendable {
        // Unchecked for the same reason: the dynamic exclusivity checks of class properties would only cost time.
        @exclusivity(unchecked) var value: Value

        init(_ value: Value) { self.value = value }
    }

    private var box: Box

    init(_ value: Value) { box = Box(value) }

    /// The value, read in place; changing it first copies it out of a box other holders share.
    var value: Value {
        _read { yield box.value }
        _modify {
            if !isKnownUniquelyReferenced(&box) { box = Box(box.value) }
            yield &box.value
        }
    }

    static func == (lhs: SharedValue, rhs: SharedValue) -> Bool {
        lhs.box === rhs.box || lhs.box.value == rhs.box.value
    }

    func hash(into hasher: inout Hasher) { box.value.hash(into: &hasher) }
}
