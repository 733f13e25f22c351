import Foundation

/// What a model's row codec round trip (`storedValues()`, then `init(storedValues:)`) makes of
/// it, done on the model itself: the key the database gave set, dates cut to the stored
/// milliseconds, and days (`dateOnly`) to the start of their day in UTC. The store returns written models in this form without decoding the row it
/// just encoded.
///
/// Only for models whose round trip changes nothing else: none for models with JSON or URL
/// columns (nested dates, relative URLs), or with stored properties their key paths do not list
/// (transient ones come back as their defaults), or without listed key paths.
///
/// The properties are written through their byte offsets in the model: key paths applied from
/// generic code cost as much as decoding the row. Dates and optional keys hold no references,
/// so writing their bytes is all an assignment does.
public struct StoredForm<Model: PersistentModel> {
    let key: Int?
    let dates: [Int]
    let optionalDates: [Int]
    let days: [Int]
    let optionalDays: [Int]

    /// `sample` is any model of the type: its stored properties are counted once.
    /// Nil when the type's round trip changes more than this form covers.
    ///
    ///     if let form = StoredForm(sample: airport) { form.apply(to: &airport, key: 42) }
    public init?(sample: Model) {
        let entity = Model.entity
        guard let paths = Model.listedKeyPaths, Mirror(reflecting: sample).children.count == paths.count else { return nil }
        let columns = entity.columns
        let offset = entity.hasImplicitKey ? 1 : 0
        guard paths.count >= offset + columns.count else { return nil }
        if entity.hasImplicitKey {
            guard let path = paths[0] as? WritableKeyPath<Model, Int64?>, let key = MemoryLayout<Model>.offset(of: path) else { return nil }
            self.key = key
        } else {
            key = nil
        }
        var dates: [Int] = [], optionalDates: [Int] = [], days: [Int] = [], optionalDays: [Int] = []
        for (index, column) in columns.enumerated() {
            switch column.storage {
            case .json, .url:
                return nil
            case .date, .day:
                let path = paths[offset + index]
                guard let partial = path as? PartialKeyPath<Model>, let byteOffset = MemoryLayout<Model>.offset(of: partial) else { return nil }
                let isDay = column.storage == .day
                if path is WritableKeyPath<Model, Date> {
                    if isDay { days.append(byteOffset) } else { dates.append(byteOffset) }
                } else if path is WritableKeyPath<Model, Date?> {
                    if isDay { optionalDays.append(byteOffset) } else { optionalDates.append(byteOffset) }
                } else {
                    return nil
                }
            default:
                continue
            }
        }
        self.dates = dates
        self.optionalDates = optionalDates
        self.days = days
        self.optionalDays = optionalDays
    }

    /// The model as the row codec would hand it back, with `key` (when the database gave one).
    public func apply(to model: inout Model, key value: Int64?) {
        withUnsafeMutableBytes(of: &model) { bytes in
            if let key, let value { bytes.storeBytes(of: Optional(value), toByteOffset: key, as: Int64?.self) }
            for offset in dates {
                bytes.storeBytes(of: StoredDate.rounded(bytes.load(fromByteOffset: offset, as: Date.self)), toByteOffset: offset, as: Date.self)
            }
            for offset in optionalDates {
                if let date = bytes.load(fromByteOffset: offset, as: Date?.self) {
                    bytes.storeBytes(of: Optional(StoredDate.rounded(date)), toByteOffset: offset, as: Date?.self)
                }
            }
            for offset in days {
                bytes.storeBytes(of: StoredDate.startOfDay(bytes.load(fromByteOffset: offset, as: Date.self)), toByteOffset: offset, as: Date.self)
            }
            for offset in optionalDays {
                if let date = bytes.load(fromByteOffset: offset, as: Date?.self) {
                    bytes.storeBytes(of: Optional(StoredDate.startOfDay(date)), toByteOffset: offset, as: Date?.self)
                }
            }
        }
    }
}
