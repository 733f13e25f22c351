import Foundation
import SQLDialects
import SchemaMetadata

// The devices a sync server has seen (its `schemagen_sync_devices` table), by the schema
// version their app was built with: `migrate status` lists them, and `complete` refuses to drop
// a version that devices synced through lately, since they could not sync again.
extension Migrator {
    /// A device a sync server has seen for this schema.
    public struct SyncDevice: Sendable, Hashable {
        /// Its id.
        public let device: String
        /// The schema version its app was built with.
        public let schemaVersion: Int
        /// When it last pushed or pulled.
        public let lastSeen: Date
    }

    /// The devices a sync server of this database has seen for this schema, most recent first;
    /// none where no sync server ever ran. (A row whose id starts with `#` is the server's own.)
    ///
    ///     for device in try migrator.syncDevices() { print(device.device, device.schemaVersion, device.lastSeen) }
    public func syncDevices() throws(MigratorError) -> [SyncDevice] {
        guard try database.tableExists("schemagen_sync_devices", schema: nil) else { return [] }
        let rows = try database.query(
            "SELECT device, schema_version, last_seen FROM \(database.qualifiedName("schemagen_sync_devices", schema: nil)) WHERE schema = \(value: .text(schema)) AND device NOT LIKE '#%' ORDER BY last_seen DESC, device"
        )
        return rows.compactMap { row in
            guard row.count == 3, case .text(let device) = row[0], case .integer(let version) = row[1] else { return nil }
            let seconds: Double =
                switch row[2] {
                case .real(let value): value
                case .integer(let value): Double(value)
                default: 0
                }
            return SyncDevice(device: device, schemaVersion: Int(version), lastSeen: Date(timeIntervalSince1970: seconds))
        }
    }

    /// Refuses the contract of the expanded migration when devices synced through a version it
    /// drops within `options.deviceRetention`, naming them, unless `options.strandDevices`.
    func refuseStrandingDevices(_ state: OnlineState, options: Options) throws(MigratorError) {
        guard state.phase == .expanded, let newest = try servedVersions().max() else { return }
        try refuseStrandingDevices(below: newest, migration: state.version, options: options)
    }

    /// The same for a contract `up --complete` plans: every version below `newest` goes.
    func refuseStrandingDevices(below newest: Int, migration: Int, options: Options) throws(MigratorError) {
        guard !options.strandDevices else { return }
        let since = Date().addingTimeInterval(-options.deviceRetention)
        // Versions already dropped strand nobody now; those still served below `newest` go.
        let oldest = try servedVersions().min() ?? 0
        let stranded = try syncDevices().filter { $0.schemaVersion >= oldest && $0.schemaVersion < newest && $0.lastSeen >= since }
        guard !stranded.isEmpty else { return }
        let listed = stranded.prefix(10).map { "\($0.device) (version \($0.schemaVersion), last seen \(Self.timestamp($0.lastSeen)))" }.joined(separator: ", ")
        let more = stranded.count > 10 ? " and \(stranded.count - 10) more" : ""
        let versions = Set(stranded.map(\.schemaVersion)).sorted().map(String.init).joined(separator: ", ")
        throw .onlineState(
            "completing migration \(MigratorError.number(migration)) drops \(schema)'s version \(versions), through which \(stranded.count) sync devices synced in the last \(Int(options.deviceRetention / 86_400)) days: \(listed)\(more). They could not sync again until their app is updated: wait for them to update, or pass --strand-devices"
        )
    }

    static func timestamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }
}
