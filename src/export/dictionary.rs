//! A string column's Parquet dictionary, made the way polars makes it but from the column's
//! runs.
//!
//! polars writes a string column dictionary-encoded unless its cardinality, estimated by a
//! HyperLogLog over every value, is above three quarters of its rows (columns of more than 128
//! rows). It hashes every value twice for that: once for the estimate, once to build the
//! dictionary (a hash map lookup and a compare per row). A usage batch repeats most values row
//! after row (session, file, project, model, provider, api), so here a row whose view equals
//! the previous row's takes its key without hashing, and the estimate is taken over the
//! distinct values only (a HyperLogLog's registers are the same whatever the repeats and their
//! order). A column found more than three quarters distinct on the way (ids) is weighed as
//! polars weighs it, over all its rows, and the rest of its dictionary is not made when that
//! says plain. The pages are in every case polars' own: the same values in the same order
//! (first seen first), the same keys and validity, the same choice of encoding.
//!
//! A float column polars weighs the same way, over every row, only to find that it cannot
//! make a dictionary of floats and to write it plain: here it is written plain at once.

use polars::prelude::ArrowDataType;
use polars_arrow::array::{Array, DictionaryArray, MutableBinaryViewArray, PrimitiveArray, Utf8ViewArray};
use polars_arrow::datatypes::IntegerType;
use polars_compute::hyperloglogplus::HyperLogLog;
use polars_parquet::write::Encoding;

/// The rows above which polars weighs the estimated cardinality (below, it always tries a
/// dictionary).
const SMALL: usize = 128;

/// A string column of `encoding` (one leaf) as polars' writer would hand it to its page
/// encoder: the dictionary array with `RleDictionary`, or the column itself with `Plain` when
/// polars would find a dictionary not worth it. `None` for anything else (other types, an
/// empty column, other encodings), left to polars.
pub fn string_column(array: &dyn Array, encoding: &[Encoding]) -> Option<(Box<dyn Array>, Encoding)> {
    if encoding != [Encoding::RleDictionary] || array.is_empty() {
        return None;
    }
    let strings = array.as_any().downcast_ref::<Utf8ViewArray>()?;
    let rows = strings.len();
    // polars weighs the estimate only for columns of more than 128 rows.
    let too_many = |cardinality: usize| rows > SMALL && cardinality as f64 / rows as f64 > 0.75;
    let mut d = Dictionary::with_capacity(rows);
    // Whether the estimate was taken over the whole column already.
    let mut weighed = rows <= SMALL;
    for i in 0..rows {
        d.push(strings, i);
        // More than three quarters distinct already, or every row distinct an eighth of the
        // way in (ids): polars' estimate over the whole column, most likely too many, saves
        // making the rest of the dictionary. (When it is not, the dictionary goes on, weighed.)
        let ids = i + 1 == (rows / 8).max(SMALL) && d.values.len() == i + 1;
        if !weighed && (ids || d.values.len() * 4 > rows * 3) {
            weighed = true;
            if too_many(polars_compute::cardinality::estimate_cardinality(strings)) {
                return Some((strings.to_boxed(), Encoding::Plain));
            }
        }
    }
    if !weighed {
        // polars' `estimate_cardinality`: 1 for a column of nulls only; otherwise a
        // HyperLogLog of the values' bytes, a null counted as the empty string.
        let cardinality = if strings.null_count() == rows {
            1
        } else {
            let mut hll = HyperLogLog::<[u8]>::new();
            for value in d.values.values_iter() {
                hll.add(value.as_bytes());
            }
            if strings.null_count() > 0 {
                hll.add(b"".as_slice());
            }
            hll.count()
        };
        if too_many(cardinality) {
            return Some((strings.to_boxed(), Encoding::Plain));
        }
    }
    let dtype = ArrowDataType::Dictionary(IntegerType::UInt32, Box::new(ArrowDataType::Utf8View), false);
    let keys = PrimitiveArray::new(ArrowDataType::UInt32, d.keys.into(), strings.validity().cloned());
    let array = DictionaryArray::try_new(dtype, keys, d.values.freeze().boxed()).ok()?;
    Some((array.boxed(), Encoding::RleDictionary))
}

/// The encoding of a float column (one leaf), when polars would try a dictionary for it:
/// plain. polars tries one for every primitive column; for floats it estimates the column's
/// cardinality first (a HyperLogLog over every row), then cannot cast floats to a dictionary,
/// and writes the column plain. Here the estimate is skipped: the pages are the same. `None`
/// for anything else (other types, an empty column, whose empty dictionary polars writes).
pub fn float_column(array: &dyn Array, encoding: &[Encoding]) -> Option<Encoding> {
    let float = matches!(
        array.dtype(),
        ArrowDataType::Float16 | ArrowDataType::Float32 | ArrowDataType::Float64
    );
    (float && encoding == [Encoding::RleDictionary] && !array.is_empty()).then_some(Encoding::Plain)
}

/// A column's keys (0 for a null, as polars' builder leaves it) and its distinct values in the
/// order first seen, a row at a time.
struct Dictionary<'a> {
    keys: Vec<u32>,
    values: MutableBinaryViewArray<str>,
    seen: hashbrown::HashMap<&'a str, u32>,
    /// The previous valid row's view and key.
    last: Option<(u128, u32)>,
}

impl<'a> Dictionary<'a> {
    fn with_capacity(rows: usize) -> Dictionary<'a> {
        Dictionary {
            keys: Vec::with_capacity(rows),
            values: MutableBinaryViewArray::new(),
            seen: hashbrown::HashMap::new(),
            last: None,
        }
    }

    /// Row `i` of `strings` (which must be below its length).
    fn push(&mut self, strings: &'a Utf8ViewArray, i: usize) {
        if strings.is_null(i) {
            return self.keys.push(0);
        }
        // Equal views are equal values: the same bytes inline, or the same bytes in a buffer.
        let view = strings.views()[i].as_u128();
        let key = match self.last {
            Some((previous, key)) if previous == view => key,
            _ => {
                // SAFETY: `i` is below the column's length (`views()[i]` checked it).
                let value = unsafe { strings.value_unchecked(i) };
                let values = &mut self.values;
                *self.seen.entry(value).or_insert_with(|| {
                    values.push_value(value);
                    (values.len() - 1) as u32
                })
            }
        };
        self.last = Some((view, key));
        self.keys.push(key);
    }
}

#[cfg(test)]
mod tests {
    use polars::prelude::*;
    use proptest::prelude::*;

    /// Frames of two string columns from `(value, repeat)` runs, nulls among them.
    fn frame(rows: &[(Option<u16>, u8)], spread: u16) -> DataFrame {
        let text = |v: u16| {
            let v = v % spread.max(1);
            // Short (inline) and long (in a buffer) values both.
            if v.is_multiple_of(3) {
                format!("m{v}")
            } else {
                format!("a-longer-value-{v:05}-kept-in-a-buffer")
            }
        };
        let mut a: Vec<Option<String>> = Vec::new();
        for &(value, repeat) in rows {
            for _ in 0..=repeat % 4 {
                a.push(value.map(text));
            }
        }
        let b: Vec<Option<String>> = (0..a.len()).map(|i| Some(format!("unique-{i}"))).collect();
        df!("a" => a, "b" => b).expect("a frame")
    }

    /// The bytes pisa's sink writes for `df`, and those polars' own writer writes.
    fn both(df: &DataFrame) -> (Vec<u8>, Vec<u8>) {
        let mut ours = Vec::new();
        super::super::encode(&mut df.clone(), &mut ours, super::super::Format::Parquet).expect("ours");
        let theirs = super::super::polars_parquet(&mut df.clone()).expect("polars'");
        (ours, theirs)
    }

    /// `df` as pisa's sink writes it, which must be polars' own bytes (`case` names it when
    /// not), read back.
    fn polars_own(df: &DataFrame, case: &str) -> DataFrame {
        let (ours, theirs) = both(df);
        assert!(
            ours == theirs,
            "{case}: {} bytes against polars' {}",
            ours.len(),
            theirs.len()
        );
        ParquetReader::new(std::io::Cursor::new(ours)).finish().expect("read")
    }

    /// Around the two edges of polars' choice (128 rows; three quarters distinct) and with
    /// nulls only, the file is polars' own, and it holds the values.
    #[test]
    fn dictionaries_at_the_edges_are_polars_own() {
        let cases: Vec<Vec<(Option<u16>, u8)>> = vec![
            (0..128).map(|i| (Some(i), 0)).collect(),
            (0..129).map(|i| (Some(i), 0)).collect(),
            (0..200).map(|i| (Some(i), u8::from(i % 4 == 0))).collect(),
            (0..200).map(|i| (Some(i), u8::from(i % 2 == 0))).collect(),
            (0..300).map(|_| (None, 1)).collect(),
            (0..300).map(|i| ((i % 5 != 0).then_some(i), 0)).collect(),
        ];
        for (n, rows) in cases.iter().enumerate() {
            let df = frame(rows, u16::MAX);
            let back = polars_own(&df, &format!("case {n}"));
            assert!(back.equals_missing(&df), "case {n}");
        }
    }

    /// Across the three quarters edge (400 rows, 280 to 320 distinct values, with and
    /// without a null, which polars' estimate counts as one more value): polars' own choice.
    #[test]
    fn the_choice_at_three_quarters_distinct_is_polars_own() {
        for distinct in 280..=320u16 {
            for null in [false, true] {
                let mut rows: Vec<(Option<u16>, u8)> = (0..distinct).map(|i| (Some(i), 0)).collect();
                rows.extend(std::iter::repeat_n((Some(7), 0), 400 - usize::from(distinct)));
                if null {
                    rows[9].0 = None;
                }
                let df = frame(&rows, u16::MAX);
                let (ours, theirs) = both(&df);
                assert!(ours == theirs, "{distinct} distinct, null {null}: not polars' bytes");
            }
        }
    }

    /// Columns distinct row after row for their first eighth (where the estimate is taken),
    /// then repeating (a dictionary) or not (plain): polars' own bytes either way.
    #[test]
    fn columns_distinct_at_first_are_polars_own() {
        for (rows, distinct) in [(2_000, 2_000), (2_000, 300), (2_000, 1_600), (1_000, 128), (1_000, 127)] {
            // Inline values and values in a buffer.
            for prefix in ["id-", "an-entry-id-kept-in-a-buffer-"] {
                let values: Vec<String> = (0..rows)
                    .map(|i| format!("{prefix}{:08}", i.min(distinct - 1)))
                    .collect();
                let df = df!("a" => values).expect("a frame");
                let case = format!("{rows} rows, {distinct} distinct, {prefix}");
                assert_eq!(polars_own(&df, &case).height(), rows, "{case}");
            }
        }
    }

    /// A column more than three quarters distinct that polars' estimate still finds a quarter
    /// repeated (the HyperLogLog counts two values whose hashes collide as one): a dictionary,
    /// as polars writes it, though its making stopped to weigh the whole column.
    #[test]
    fn a_column_the_estimate_undercounts_keeps_its_dictionary() {
        // 301 distinct values of 400 rows; polars' estimate is at most 300 for about a third
        // of such sets of values.
        let column = |base: u32| -> Vec<String> {
            let distinct = (0..301).map(|i| format!("m{}", base * 1_000 + i));
            distinct
                .chain(std::iter::repeat_n(format!("m{}", base * 1_000), 99))
                .collect()
        };
        let estimate = |values: &[String]| {
            let s = Series::new("a".into(), values);
            polars_compute::cardinality::estimate_cardinality(&*s.to_arrow(0, CompatLevel::newest()))
        };
        let base = (0..100)
            .find(|&b| estimate(&column(b)) <= 300)
            .expect("an undercounted set");
        let df = df!("a" => column(base)).expect("a frame");
        let (ours, theirs) = both(&df);
        assert!(ours == theirs, "base {base}: not polars' bytes");
    }

    /// Float columns of every shape polars could weigh (few values or all distinct, nulls,
    /// nulls only, NaN, both zeros, one row, more rows than a small column): polars' own bytes.
    #[test]
    fn float_columns_are_written_as_polars_writes_them() {
        let few = |i: usize| [0.0, 1.5, -0.0, 3.0][i % 4];
        let columns: Vec<Vec<Option<f64>>> = vec![
            vec![Some(2.0)],
            (0..100).map(|i| Some(few(i))).collect(),
            (0..1_000).map(|i| Some(few(i))).collect(),
            (0..1_000).map(|i| Some(i as f64 * 0.37)).collect(),
            (0..1_000).map(|i| (i % 3 != 0).then(|| few(i))).collect(),
            (0..1_000).map(|_| None).collect(),
            (0..1_000)
                .map(|i| Some(if i % 7 == 0 { f64::NAN } else { i as f64 }))
                .collect(),
            (0..1_000)
                .map(|i| Some(if i % 2 == 0 { f64::INFINITY } else { -0.0 }))
                .collect(),
        ];
        for (n, values) in columns.into_iter().enumerate() {
            let rows = values.len();
            let f32s: Vec<Option<f32>> = values.iter().map(|v| v.map(|v| v as f32)).collect();
            let ints: Vec<Option<i64>> = (0..rows as i64).map(|i| Some(i % 5)).collect();
            let df = df!("a" => values, "b" => f32s, "c" => ints).expect("a frame");
            assert_eq!(polars_own(&df, &format!("case {n}")).height(), rows, "case {n}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Any runs of values, repeated or not, with nulls: byte for byte polars' own file.
        #[test]
        fn string_columns_are_written_as_polars_writes_them(
            rows in prop::collection::vec((prop::option::weighted(0.9, any::<u16>()), any::<u8>()), 1..400),
            spread in 1u16..600,
        ) {
            let df = frame(&rows, spread);
            let (ours, theirs) = both(&df);
            prop_assert!(ours == theirs, "{} bytes against polars' {}", ours.len(), theirs.len());
        }
    }
}
