//! A table's columns as data: each column's name, Parquet/Arrow type, nullability, meaning
//! and the function that reads its cell from a row — so a table is defined once and the
//! arrays, the file's schema and docs/fleet-data.md all come from that one definition.
//! Pure: rows in, Arrow arrays out.

use std::sync::Arc;

use arrow_array::builder::PrimitiveBuilder;
use arrow_array::builder::{
    BooleanBuilder, Float64Builder, ListBuilder, StringBuilder, TimestampNanosecondBuilder,
    UInt32Builder, UInt64Builder,
};
use arrow_array::types::{ArrowPrimitiveType, UInt32Type, UInt64Type};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, TimeUnit};

/// How a column reads its cell from a row of type `R` (`None`: SQL NULL).
pub enum Get<R> {
    U64(fn(&R) -> Option<u64>),
    U32(fn(&R) -> Option<u32>),
    F64(fn(&R) -> Option<f64>),
    Bool(fn(&R) -> Option<bool>),
    Str(fn(&R) -> Option<String>),
    /// ns since the Unix epoch, written as a UTC timestamp.
    Time(fn(&R) -> Option<u64>),
    U64List(fn(&R) -> Option<Vec<u64>>),
    U32List(fn(&R) -> Option<Vec<u32>>),
}

/// One column of a table.
pub struct Column<R> {
    pub name: String,
    /// May be NULL: where the recording can have `null` (or lack the value); never 0 for
    /// absent.
    pub nullable: bool,
    /// What it is: the recording's field and where docs/metrics.md defines it.
    pub doc: String,
    pub get: Get<R>,
}

/// The timezone of every timestamp column.
pub const UTC: &str = "UTC";

impl<R> Column<R> {
    pub fn data_type(&self) -> DataType {
        let item = |t: DataType| DataType::List(Arc::new(Field::new("item", t, false)));
        match self.get {
            Get::U64(_) => DataType::UInt64,
            Get::U32(_) => DataType::UInt32,
            Get::F64(_) => DataType::Float64,
            Get::Bool(_) => DataType::Boolean,
            Get::Str(_) => DataType::Utf8,
            Get::Time(_) => DataType::Timestamp(TimeUnit::Nanosecond, Some(UTC.into())),
            Get::U64List(_) => item(DataType::UInt64),
            Get::U32List(_) => item(DataType::UInt32),
        }
    }

    /// The SQL type a reader sees (docs/fleet-data.md).
    pub fn sql_type(&self) -> &'static str {
        match self.get {
            Get::U64(_) => "UBIGINT",
            Get::U32(_) => "UINTEGER",
            Get::F64(_) => "DOUBLE",
            Get::Bool(_) => "BOOLEAN",
            Get::Str(_) => "VARCHAR",
            Get::Time(_) => "TIMESTAMP WITH TIME ZONE",
            Get::U64List(_) => "UBIGINT[]",
            Get::U32List(_) => "UINTEGER[]",
        }
    }

    pub fn field(&self) -> Field {
        Field::new(&self.name, self.data_type(), self.nullable)
    }

    /// The column's cells over `rows`. A NULL in a column that may not have one is an
    /// error naming the column (a recording's value out of the type's range, e.g. a
    /// timestamp past 2262).
    pub fn array(&self, rows: &[R]) -> Result<ArrayRef, String> {
        fn fill<R, T, B>(
            rows: &[R],
            get: fn(&R) -> Option<T>,
            mut b: B,
            put: impl Fn(&mut B, Option<T>),
            finish: impl FnOnce(B) -> ArrayRef,
        ) -> ArrayRef {
            for r in rows {
                put(&mut b, get(r));
            }
            finish(b)
        }
        let n = rows.len();
        let a: ArrayRef = match &self.get {
            Get::U64(g) => fill(
                rows,
                *g,
                UInt64Builder::with_capacity(n),
                |b, v| b.append_option(v),
                |mut b| Arc::new(b.finish()),
            ),
            Get::U32(g) => fill(
                rows,
                *g,
                UInt32Builder::with_capacity(n),
                |b, v| b.append_option(v),
                |mut b| Arc::new(b.finish()),
            ),
            Get::F64(g) => fill(
                rows,
                *g,
                Float64Builder::with_capacity(n),
                // NaN and infinities are no measurement: NULL.
                |b, v| b.append_option(v.filter(|x| x.is_finite())),
                |mut b| Arc::new(b.finish()),
            ),
            Get::Bool(g) => fill(
                rows,
                *g,
                BooleanBuilder::with_capacity(n),
                |b, v| b.append_option(v),
                |mut b| Arc::new(b.finish()),
            ),
            Get::Str(g) => fill(
                rows,
                *g,
                StringBuilder::with_capacity(n, n * 8),
                |b, v| b.append_option(v),
                |mut b| Arc::new(b.finish()),
            ),
            Get::Time(g) => fill(
                rows,
                *g,
                TimestampNanosecondBuilder::with_capacity(n).with_timezone(UTC),
                |b, v| b.append_option(v.and_then(|t| i64::try_from(t).ok())),
                |mut b| Arc::new(b.finish()),
            ),
            Get::U64List(g) => list::<R, UInt64Type>(rows, *g),
            Get::U32List(g) => list::<R, UInt32Type>(rows, *g),
        };
        if !self.nullable && a.null_count() > 0 {
            return Err(format!(
                "column {}: {} of {n} values missing or out of range",
                self.name,
                a.null_count()
            ));
        }
        Ok(a)
    }
}

/// A list column of `T` values (never NULL inside a list).
fn list<R, T: ArrowPrimitiveType>(rows: &[R], get: fn(&R) -> Option<Vec<T::Native>>) -> ArrayRef {
    let item = Arc::new(Field::new("item", T::DATA_TYPE, false));
    let mut b = ListBuilder::new(PrimitiveBuilder::<T>::new()).with_field(item);
    for r in rows {
        match get(r) {
            Some(xs) => {
                b.values().append_slice(&xs);
                b.append(true);
            }
            None => b.append(false),
        }
    }
    Arc::new(b.finish())
}

/// The schema of `cols`.
pub fn schema<R>(cols: &[Column<R>]) -> Schema {
    Schema::new(cols.iter().map(Column::field).collect::<Vec<_>>())
}

/// `rows` as one batch of `cols`.
pub fn batch<R>(
    cols: &[Column<R>],
    schema: &Arc<Schema>,
    rows: &[R],
) -> Result<RecordBatch, String> {
    let arrays = cols
        .iter()
        .map(|c| c.array(rows))
        .collect::<Result<Vec<_>, _>>()?;
    RecordBatch::try_new(Arc::clone(schema), arrays).map_err(|e| e.to_string())
}

/// Shorthands for a table's column list.
pub fn col<R>(
    name: impl Into<String>,
    nullable: bool,
    doc: impl Into<String>,
    get: Get<R>,
) -> Column<R> {
    Column {
        name: name.into(),
        nullable,
        doc: doc.into(),
        get,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{TimestampNanosecondType, UInt64Type};

    struct Row {
        n: Option<u64>,
        t: u64,
        xs: Option<Vec<u64>>,
        f: f64,
    }

    fn cols() -> Vec<Column<Row>> {
        vec![
            col("n", true, "", Get::U64(|r: &Row| r.n)),
            col("t", false, "", Get::Time(|r: &Row| Some(r.t))),
            col("xs", true, "", Get::U64List(|r: &Row| r.xs.clone())),
            col("f", true, "", Get::F64(|r: &Row| Some(r.f))),
        ]
    }

    #[test]
    fn absent_is_null_never_zero_and_times_are_utc_timestamps() {
        let rows = vec![
            Row {
                n: None,
                t: 1,
                xs: None,
                f: f64::NAN,
            },
            Row {
                n: Some(0),
                t: 2,
                xs: Some(vec![3, 4]),
                f: 0.5,
            },
        ];
        let c = cols();
        let s = Arc::new(schema(&c));
        let b = batch(&c, &s, &rows).unwrap();
        let n = b.column(0).as_primitive::<UInt64Type>();
        assert!(n.is_null(0));
        assert_eq!(n.value(1), 0);
        let t = b.column(1).as_primitive::<TimestampNanosecondType>();
        assert_eq!(t.value(1), 2);
        assert_eq!(
            b.schema().field(1).data_type(),
            &DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into()))
        );
        let xs = b.column(2).as_list::<i32>();
        assert!(xs.is_null(0));
        assert_eq!(xs.value(1).as_primitive::<UInt64Type>().values(), &[3, 4]);
        assert!(b.column(3).is_null(0), "NaN is no measurement");
    }

    #[test]
    fn a_null_where_none_may_be_names_the_column() {
        let rows = vec![Row {
            n: None,
            t: u64::MAX,
            xs: None,
            f: 0.0,
        }];
        let c = cols();
        let s = Arc::new(schema(&c));
        let e = batch(&c, &s, &rows).unwrap_err();
        assert!(e.contains("column t"), "{e}");
    }
}
