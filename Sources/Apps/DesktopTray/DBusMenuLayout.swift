import HandoffDBus

/// The status icon's menu as `com.canonical.dbusmenu` serves it (docs/desktop.md, "The status
/// icon"): a number for each item — the same while the item stays in the menu, so that a click
/// the panel sends a moment after a change still names what the user saw, or nothing — a
/// revision that grows with each change, and the values `GetLayout` and `GetGroupProperties`
/// answer. A value: the menu in, D-Bus values out.
package struct DBusMenuLayout: Sendable, Equatable {
    package private(set) var revision: UInt32 = 1
    package private(set) var items: [TrayMenu.Item] = []
    private var ids: [TrayMenu.Key: Int32] = [:]
    private var nextID: Int32 = 1

    package init() {}

    /// Shows `items`; whether anything changed (then the revision grew).
    package mutating func update(_ new: [TrayMenu.Item]) -> Bool {
        guard new != items else { return false }
        var kept: [TrayMenu.Key: Int32] = [:]
        for item in new {
            if let id = ids[item.key] {
                kept[item.key] = id
            } else {
                kept[item.key] = nextID
                nextID += 1
            }
        }
        ids = kept
        items = new
        revision += 1
        return true
    }

    /// What the item numbered `id` is, if it is in the menu now.
    package func key(for id: Int32) -> TrayMenu.Key? {
        ids.first { $0.value == id }?.key
    }

    /// `(ia{sv}av)` for `parent` (0: the menu itself, with every item under it); nil for a number
    /// not in the menu.
    package func layout(parent: Int32) -> DBusValue? {
        if parent == 0 {
            let children = items.compactMap { item in ids[item.key].map { DBusValue.variant(node($0, item)) } }
            return .structure([.int32(0), .vardict(Self.rootProperties), .array(element: "v", children)])
        }
        guard let item = items.first(where: { ids[$0.key] == parent }) else { return nil }
        return node(parent, item)
    }

    /// `a(ia{sv})`: the properties of each of `requested` that is in the menu (0 is the menu
    /// itself), only those named in `names` (all when empty).
    package func properties(of requested: [Int32], names: [String]) -> DBusValue {
        let wanted = Set(names)
        var rows: [DBusValue] = []
        for id in requested {
            guard var properties = properties(of: id) else { continue }
            if !wanted.isEmpty { properties = properties.filter { wanted.contains($0.key) } }
            rows.append(.structure([.int32(id), .vardict(properties)]))
        }
        return .array(element: "(ia{sv})", rows)
    }

    /// One property of one item (`GetProperty`).
    package func property(_ name: String, of id: Int32) -> DBusValue? {
        properties(of: id)?[name]
    }

    private func properties(of id: Int32) -> [String: DBusValue]? {
        if id == 0 { return Self.rootProperties }
        return items.first { ids[$0.key] == id }.map(Self.properties(of:))
    }

    private func node(_ id: Int32, _ item: TrayMenu.Item) -> DBusValue {
        .structure([.int32(id), .vardict(Self.properties(of: item)), .array(element: "v", [])])
    }

    static let rootProperties: [String: DBusValue] = ["children-display": .string("submenu")]

    package static func properties(of item: TrayMenu.Item) -> [String: DBusValue] {
        if item.isSeparator { return ["type": .string("separator")] }
        // Every property the spec defaults is sent anyway: clients differ in their defaults
        // (libdbusmenu's label is "Label Empty").
        var properties: [String: DBusValue] = [
            "type": .string("standard"), "label": .string(mnemonicSafe(item.label)), "enabled": .bool(item.enabled), "visible": .bool(true),
        ]
        if let icon = item.icon, !icon.isEmpty, !icon.hasPrefix("/") { properties["icon-name"] = .string(icon) }
        if let checked = item.checked {
            properties["toggle-type"] = .string("checkmark")
            properties["toggle-state"] = .int32(checked ? 1 : 0)
        }
        return properties
    }

    /// Labels mark mnemonics with `_`; one that is text is written `__`.
    package static func mnemonicSafe(_ label: String) -> String {
        label.replacing("_", with: "__")
    }
}
