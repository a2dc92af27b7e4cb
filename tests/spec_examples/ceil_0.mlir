%result = ceil %source : tile<f32>
