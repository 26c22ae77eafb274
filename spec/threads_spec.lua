-- The CPU kernels' parallel paths (matrix products split or batched, convolutions, reductions and
-- scans, norms, softmax, sort, losses, pooling, gathers, optimizer steps) give the same results on
-- one thread and on five: more threads than this machine has, so that every region's team is larger
-- than the workers its work asks for (core/iter.h: lt_team_size, LT_WORKERS), and the ASan build of
-- CI checks their per-worker buffers.
local torch = require 'torch'
local F = torch.nn.functional

-- each result of a fixed workload, large enough to go parallel
local function run()
  torch.manual_seed(3)
  local out = {}
  local x = torch.randn(16, 32, 14, 14)
  local w = torch.randn(64, 32, 3, 3)
  local xr, wr = x:clone():requires_grad_(), w:clone():requires_grad_()
  local y = F.conv2d(xr, wr, nil, { padding = 1 })
  ;(y * y):sum():backward()
  out[#out + 1] = y; out[#out + 1] = xr.grad; out[#out + 1] = wr.grad
  local xd = torch.randn(8, 3, 30, 30):requires_grad_()
  local wd = torch.randn(6, 1, 3, 3):requires_grad_()
  local yd = F.conv2d(xd, wd, nil, { groups = 3, padding = 1 })
  yd:sum():backward(); out[#out + 1] = yd; out[#out + 1] = xd.grad; out[#out + 1] = wd.grad
  local xi = torch.randn(8, 5, 20, 20):requires_grad_()
  local wi = torch.randn(7, 5, 4, 4):requires_grad_()
  local yi = F.conv2d(xi, wi, nil, { stride = 2 }); yi:sum():backward()
  out[#out + 1] = yi; out[#out + 1] = xi.grad; out[#out + 1] = wi.grad
  local a, b = torch.randn(64, 784), torch.randn(512, 784)
  out[#out + 1] = a:mm(b:t()); out[#out + 1] = b:mm(a:t()); out[#out + 1] = torch.randn(300, 700):mm(torch.randn(700, 900))
  out[#out + 1] = torch.bmm(torch.randn(200, 16, 16), torch.randn(200, 16, 16))
  out[#out + 1] = torch.randint(-5, 5, { 40, 60 }):mm(torch.randint(-5, 5, { 60, 50 }))
  out[#out + 1] = torch.randn(300, 400):to(torch.float16):mm(torch.randn(400, 300):to(torch.float16)):float()
  out[#out + 1] = torch.randn(300, 400):to(torch.bfloat16):mm(torch.randn(400, 300):to(torch.bfloat16)):float()
  local big = torch.randn(256, 1000)
  out[#out + 1] = big:sum(1); out[#out + 1] = big:sum(2); out[#out + 1] = big:max(1); out[#out + 1] = big:cumsum(2); out[#out + 1] = big:cumsum(1)
  out[#out + 1] = torch.randn(3, 200000):sum(2); out[#out + 1] = torch.randn(200000, 3):sum(1)
  out[#out + 1] = F.layer_norm(big, { 1000 }); out[#out + 1] = F.softmax(big, 2); out[#out + 1] = big:sort(2)
  out[#out + 1] = F.cross_entropy(torch.randn(70000, 10), torch.randint(1, 11, { 70000 }))
  out[#out + 1] = F.max_pool2d(torch.randn(32, 16, 28, 28), 2); out[#out + 1] = F.avg_pool2d(torch.randn(32, 16, 28, 28), 2)
  out[#out + 1] = big:index_select(2, torch.randint(1, 1001, { 500 }))
  local p = torch.nn.Parameter(torch.randn(300000))
  local opt = torch.optim.Adam({ p }, { lr = 0.1 })
  p.grad = torch.randn(300000); opt:step(); out[#out + 1] = p:detach():clone()
  local q = torch.nn.Parameter(torch.randn(300000))
  local sgd = torch.optim.SGD({ q }, { lr = 0.1, momentum = 0.9 })
  q.grad = torch.randn(300000); sgd:step(); sgd:step(); out[#out + 1] = q:detach():clone()
  return out
end

describe('threads', function()
  it('the parallel kernels give on five threads what they give on one', function()
    local before = torch.get_num_threads()
    torch.set_num_threads(1)
    local one = run()
    torch.set_num_threads(5)
    local ok, many = pcall(run)
    torch.set_num_threads(before)
    assert(ok, many)
    assert.are.equal(#one, #many)
    for i = 1, #one do
      local a, b = one[i]:double(), many[i]:double()
      assert.are.same({ table.unpack(a.shape) }, { table.unpack(b.shape) })
      local d = (a - b):abs():max():item() / math.max(1, a:abs():max():item())
      -- the same sums, split into other parts: float32 rounding apart
      assert(d <= 1e-5, string.format('result %d differs by %.3g', i, d))
    end
  end)
end)
