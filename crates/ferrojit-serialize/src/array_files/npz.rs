//! NumPy's `.npz` format: a zip archive whose members are `.npy` arrays (`numpy.savez`
//! stores them, `numpy.savez_compressed` deflates them). Arrays come back in the archive's
//! order with their member names less `.npy` (`arr_0`, `arr_1`, … for positional arrays).

use std::collections::HashSet;
use std::io::{Cursor, Read, Write};

use ferrojit_tensor::Tensor;
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipArchive, ZipWriter};

use super::npy::{read_npy, write_npy};
use super::ArrayFileError;

/// The default bound on the bytes all members of one `.npz` may inflate to (4 GiB): a
/// deflated member can claim any size, so reading stops there rather than trusting it.
pub const DEFAULT_NPZ_MEMBER_LIMIT: u64 = 4 << 30;

/// Reads every array of an `.npz`, in archive order, named as stored less `.npy`.
pub fn read_npz(bytes: &[u8]) -> Result<Vec<(String, Tensor)>, ArrayFileError> {
    read_npz_with_limit(bytes, DEFAULT_NPZ_MEMBER_LIMIT)
}

/// [`read_npz`] with a bound on the bytes all members together may inflate to.
pub fn read_npz_with_limit(
    bytes: &[u8],
    max_total_bytes: u64,
) -> Result<Vec<(String, Tensor)>, ArrayFileError> {
    let mut archive =
        ZipArchive::new(Cursor::new(bytes)).map_err(|e| ArrayFileError::Zip(e.to_string()))?;
    let mut arrays = Vec::with_capacity(archive.len());
    let mut names = HashSet::new();
    let mut budget = max_total_bytes;
    for index in 0..archive.len() {
        let mut member = archive
            .by_index(index)
            .map_err(|e| ArrayFileError::Zip(e.to_string()))?;
        if member.is_dir() {
            continue;
        }
        let stored_name = member.name().to_string();
        let name = stored_name
            .strip_suffix(".npy")
            .unwrap_or(&stored_name)
            .to_string();
        if !names.insert(name.clone()) {
            return Err(ArrayFileError::DuplicateName(name));
        }
        let too_large = || ArrayFileError::MemberTooLarge {
            member: stored_name.clone(),
            limit: max_total_bytes,
        };
        if member.size() > budget {
            return Err(too_large());
        }
        // The declared size is a hint only; the read itself is bounded by what is left.
        let mut contents = Vec::with_capacity(usize::try_from(member.size()).unwrap_or(0));
        (&mut member)
            .take(budget.saturating_add(1))
            .read_to_end(&mut contents)
            .map_err(|e| ArrayFileError::Member {
                member: stored_name.clone(),
                source: Box::new(ArrayFileError::Zip(e.to_string())),
            })?;
        let used = contents.len() as u64;
        if used > budget {
            return Err(too_large());
        }
        budget -= used;
        let tensor = read_npy(&contents).map_err(|source| ArrayFileError::Member {
            member: stored_name.clone(),
            source: Box::new(source),
        })?;
        arrays.push((name, tensor));
    }
    Ok(arrays)
}

/// Writes named arrays as an `.npz` (stored, uncompressed, as `numpy.savez` does); each
/// member is `NAME.npy`.
pub fn write_npz(arrays: &[(String, Tensor)]) -> Result<Vec<u8>, ArrayFileError> {
    let mut seen = HashSet::new();
    let mut writer = ZipWriter::new(Cursor::new(Vec::new()));
    for (name, tensor) in arrays {
        if !seen.insert(name.as_str()) {
            return Err(ArrayFileError::DuplicateName(name.clone()));
        }
        let bytes = write_npy(tensor).map_err(|source| ArrayFileError::Member {
            member: format!("{name}.npy"),
            source: Box::new(source),
        })?;
        // Members past 4 GiB need the zip64 extension.
        let options = SimpleFileOptions::default()
            .compression_method(CompressionMethod::Stored)
            .large_file(bytes.len() as u64 >= u64::from(u32::MAX));
        writer
            .start_file(format!("{name}.npy"), options)
            .and_then(|()| writer.write_all(&bytes).map_err(Into::into))
            .map_err(|e| ArrayFileError::Zip(e.to_string()))?;
    }
    let cursor = writer
        .finish()
        .map_err(|e| ArrayFileError::Zip(e.to_string()))?;
    Ok(cursor.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrojit_tensor::DType;

    fn sample() -> Vec<(String, Tensor)> {
        vec![
            (
                "arr_0".to_string(),
                Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap(),
            ),
            (
                "arr_1".to_string(),
                Tensor::from_vec(vec![true, false], &[2]).unwrap(),
            ),
            (
                "weights".to_string(),
                Tensor::from_vec(vec![5i64], &[]).unwrap(),
            ),
        ]
    }

    #[test]
    fn round_trips_in_order() {
        let bytes = write_npz(&sample()).unwrap();
        let back = read_npz(&bytes).unwrap();
        let names: Vec<&str> = back.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["arr_0", "arr_1", "weights"]);
        assert_eq!(back[0].1.to_f64_vec(), vec![1.0, 2.0, 3.0, 4.0]);
        assert_eq!(back[1].1.dtype(), DType::Bool);
        assert_eq!(back[2].1.sizes(), &[] as &[usize]);
        assert_eq!(back[2].1.to_i64_vec(), vec![5]);
    }

    #[test]
    fn limits_and_damage_are_errors() {
        let bytes = write_npz(&sample()).unwrap();
        assert!(matches!(
            read_npz_with_limit(&bytes, 100),
            Err(ArrayFileError::MemberTooLarge { .. })
        ));
        assert!(matches!(
            read_npz(b"not a zip"),
            Err(ArrayFileError::Zip(_))
        ));
        for end in [0, 10, bytes.len() / 2, bytes.len() - 1] {
            assert!(read_npz(&bytes[..end]).is_err(), "truncated at {end}");
        }
        let duplicate = vec![sample()[0].clone(), sample()[0].clone()];
        assert!(matches!(
            write_npz(&duplicate),
            Err(ArrayFileError::DuplicateName(_))
        ));
        // A member that is not an array names the member.
        let mut writer = ZipWriter::new(Cursor::new(Vec::new()));
        writer
            .start_file("arr_0.npy", SimpleFileOptions::default())
            .unwrap();
        writer.write_all(b"\x93NUMPY\x01\x00\xff\x00{").unwrap();
        let broken = writer.finish().unwrap().into_inner();
        let error = read_npz(&broken).unwrap_err();
        assert!(error.to_string().contains("arr_0.npy"), "{error}");
    }
}
