fn main() -> Result<(), ferrojit::Error> {
    ferrojit::set_num_threads(4)?;                        // before the first model runs
    let model = ferrojit::load("examples/mlp.pt2")?;      // or examples/mlp.pt
    let x = ferrojit::Tensor::from_vec(vec![0.5_f32; 8], &[2, 4])?;
    let y = model.forward(vec![x.into(), 0.5.into()])?;   // forward(x, 0.5)
    let values: Vec<f32> = y.to_tensor()?.to_vec()?;      // checked against the dtype
    println!("{values:?}");
    Ok(())
}
