%source = constant <f32: 0.0> : tile<4xf32>
%result = negf %source : tile<4xf32>
