/// What opening a store does with migrations the database has not applied yet.
///
///     let store = try Store(url: url, schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations,
///                           configuration: Store.Configuration(migrations: .verify))
public enum OpeningMigrations: Sendable, Hashable {
    /// Applies them, under the migrator's lock (the default: one process, or the first of many).
    case apply
    /// Applies nothing: opening fails with `StoreError.migration` naming the pending ones. For
    /// fleets that migrate as a deploy step (`migrate up`) before the new code starts.
    case verify
}
