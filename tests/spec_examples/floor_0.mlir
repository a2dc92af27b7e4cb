%source = constant <f32: 1.5> : tile<f32>
%result = floor %source : tile<f32>
